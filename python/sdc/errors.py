"""One exception type for every problem a user can fix (bad parameter, bad file, infeasible request).

The CLI turns it into a one-line message on stderr and exit code 2.
"""


class SdcError(ValueError):
    """A problem with the user's input; the message names the parameter, column, row or value."""


class SdcWarning(UserWarning):
    """Something the user should know that does not stop the work (parameters that cannot keep a rule's
    promise); the CLI prints each once, as "sdc <command>: warning: ..."."""
