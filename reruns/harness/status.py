"""SOL-ExecBench evaluation statuses (sol_execbench.data.trace.EvaluationStatus)."""

PASSED = "PASSED"
INVALID_REFERENCE = "INVALID_REFERENCE"
INCORRECT_SHAPE = "INCORRECT_SHAPE"
INCORRECT_NUMERICAL = "INCORRECT_NUMERICAL"
INCORRECT_DTYPE = "INCORRECT_DTYPE"
RUNTIME_ERROR = "RUNTIME_ERROR"
COMPILE_ERROR = "COMPILE_ERROR"
TIMEOUT = "TIMEOUT"

ALL = (
    PASSED,
    INVALID_REFERENCE,
    INCORRECT_SHAPE,
    INCORRECT_NUMERICAL,
    INCORRECT_DTYPE,
    RUNTIME_ERROR,
    COMPILE_ERROR,
    TIMEOUT,
)

# How bad a status is, for taking the worst over outputs or trials (unknown ones count as a
# runtime error).
SEVERITY = {
    PASSED: 0,
    INCORRECT_NUMERICAL: 1,
    INCORRECT_DTYPE: 2,
    INCORRECT_SHAPE: 3,
    RUNTIME_ERROR: 4,
    TIMEOUT: 5,
    COMPILE_ERROR: 6,
    INVALID_REFERENCE: 7,
}


def severity(status: str | None) -> int:
    return SEVERITY.get(status, SEVERITY[RUNTIME_ERROR])
