"""build_app(settings): the Gradio app. For now one Ask page; the Demo, Annotate, Browse and
Dashboard tabs are built on this factory in later releases."""

from __future__ import annotations

import gradio as gr

from ragshield.config import Settings
from ragshield.llm.base import LLM
from ragshield.llm.factory import make_llm
from ragshield.store.database import Store, open_store

ASK_SYSTEM = (
    "Answer the question using only the context. Answer as briefly as possible. "
    "If the context does not contain the answer, say: I don't know."
)


def answer_question(llm: LLM, context: str, question: str) -> tuple[str, str]:
    """The model's answer and a one-line account of the call."""
    if not question.strip():
        return "", "Type a question first."
    reply = llm.chat(
        [
            {"role": "system", "content": ASK_SYSTEM},
            {"role": "user", "content": f"Context:\n{context.strip()}\n\nQuestion: {question.strip()}"},
        ],
        max_tokens=128,
    )
    source = "call cache" if reply.cache_hit else llm.name
    info = (
        f"{reply.prompt_tokens} prompt + {reply.completion_tokens} answer tokens, "
        f"{reply.seconds:.2f} s, from {source}"
    )
    return reply.text.strip(), info


def build_app(settings: Settings, store: Store | None = None) -> gr.Blocks:
    store = store or open_store(settings.database_url)
    llm = make_llm(settings, store=store)
    with gr.Blocks(title="ragshield") as app:
        gr.Markdown(
            "# ragshield\nRisk control for retrieval-augmented question answering. "
            f"Model: `{llm.name}` · database: `{store.url}`"
        )
        context = gr.Textbox(label="Passages", lines=6, value="Paris is the capital of France.")
        question = gr.Textbox(label="Question", value="What is the capital of France?")
        ask = gr.Button("Ask", variant="primary")
        answer = gr.Textbox(label="Answer", interactive=False)
        info = gr.Markdown()
        ask.click(
            lambda c, q: answer_question(llm, c, q),
            inputs=[context, question],
            outputs=[answer, info],
            api_name="ask",
        )
    return app
