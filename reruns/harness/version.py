HARNESS_NAME = "KernelIndex rerun harness"
HARNESS_VERSION = "0.1.0"
