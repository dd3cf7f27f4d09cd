"""The one error type for bad user input: it names the file, the object and the field."""

from __future__ import annotations


class InputError(Exception):
    """Bad input. ``str()`` is one line: ``FILE: OBJECT: FIELD: problem`` (parts that are known).

    The CLI prints it and exits with code 2.
    """

    def __init__(self, message: str, file: str = "", obj: str = "", field: str = "", line: int | None = None):
        super().__init__(message)
        self.message = message
        self.file = file
        self.obj = obj
        self.field = field
        self.line = line

    def at(self, file: str = "", obj: str = "") -> InputError:
        """This error with the file/object filled in where still unknown."""
        return InputError(self.message, self.file or file, self.obj or obj, self.field, self.line)

    def __str__(self) -> str:
        where = self.file + (f":{self.line}" if self.line else "")
        parts = [p for p in (where, self.obj, self.field) if p]
        return ": ".join(parts + [self.message])
