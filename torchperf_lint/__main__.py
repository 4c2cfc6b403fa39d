from torchperf_lint.cli import main

main()
