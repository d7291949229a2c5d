from ragshield.cli import main

main()
