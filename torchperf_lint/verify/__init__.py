"""`torchperf-lint verify`: run a training script as written and rewritten, and measure both.

The parent process (command, variants, runner, stats, report) never imports torch; only the
child process (`harness`) does, so the static linter stays importable without PyTorch.
"""
