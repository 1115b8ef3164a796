"""strsignal(3)'s texts, as the negative codes torchrun reports for a worker a signal ended. Pure.

srun prints them for a task killed by a signal (SchedMD/slurm src/srun/launch.c _task_finish), Flux's first-task-exit
report in parentheses (flux-framework/flux-core src/shell/doom.c doom_disposition: " (%s)", strsignal)."""

SIGNAL_CODES = {"Killed": -9, "Terminated": -15, "Segmentation fault": -11, "Aborted": -6, "Bus error": -7,
                "Illegal instruction": -4}
# The signal a worker's exit code names (torchrun's -N, a shell's 128 + N), as the catalog tags it
CODE_SIGNALS = {-9: "sigkill", 137: "sigkill", -11: "sigsegv", 139: "sigsegv", -6: "sigabrt", 134: "sigabrt",
                -7: "sigbus", 135: "sigbus", -4: "sigill", 132: "sigill"}
