"""What the two HTTP faces share (the web app and the guard API run in one server): bounded
reading of request bodies, and reading the files of logins and keys."""
