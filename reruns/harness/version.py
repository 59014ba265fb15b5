HARNESS_NAME = "KernelIndex rerun harness"
HARNESS_VERSION = "0.2.0"
