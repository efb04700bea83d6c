"""One exception type for every problem a user can fix (bad parameter, bad file, infeasible request).

The CLI turns it into a one-line message on stderr and exit code 2.
"""


class SdcError(ValueError):
    """A problem with the user's input; the message names the parameter, column, row or value."""
