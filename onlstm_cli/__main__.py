from onlstm_cli.cli.commands import main

main()
