"""The Gradio app: wiring only, every action calls a library function."""
