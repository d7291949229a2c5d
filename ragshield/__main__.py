from ragshield.cli import main

main(prog_name="python -m ragshield")
