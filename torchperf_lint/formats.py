"""The names of the output formats, apart from their renderers (`report`): the command line
lists them without importing any."""

FORMATS = (
    "full",
    "concise",
    "grouped",
    "json",
    "json-lines",
    "junit",
    "github",
    "gitlab",
    "pylint",
    "rdjson",
    "sarif",
)
# Formats for people: they end with the summary (`Found N errors.`) and may be coloured.
TEXT_FORMATS = ("full", "concise", "grouped")
