"""Use cases: what the faces (the CLI, the web app, the HTTP API) ask ragshield to do. Each
face turns its input into a service call and renders the result; the rules themselves
(retrieval and noise, answering, judging, deciding, falling back, keeping a record) live
here and below, once. One subpackage per thing a person does (questions, guarding, data,
annotation, runs, learning); what no one of them owns (the Shield, the store's opening,
defaults, form values, jobs, packaged models, rendering) sits here."""
