"""JSON schemas of what the consumers of our CI formats read, written from their documentation:
GitLab's Code Quality report and reviewdog's Diagnostic Format (rdjson)."""

from __future__ import annotations

# GitLab's Code Quality report, as its documentation lists the fields it reads.
GITLAB_SCHEMA = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["description", "check_name", "fingerprint", "severity", "location"],
        "properties": {
            "description": {"type": "string", "minLength": 1},
            "check_name": {"type": "string", "minLength": 1},
            "fingerprint": {"type": "string", "minLength": 1},
            "severity": {"enum": ["info", "minor", "major", "critical", "blocker"]},
            "location": {
                "type": "object",
                "required": ["path", "lines"],
                "properties": {
                    "path": {"type": "string", "pattern": "^[^/]"},
                    "lines": {
                        "type": "object",
                        "required": ["begin"],
                        "properties": {
                            "begin": {"type": "integer", "minimum": 1},
                            "end": {"type": "integer", "minimum": 1},
                        },
                    },
                },
            },
        },
    },
}
# reviewdog's DiagnosticResult (proto/rdf): the types and enums its parser accepts.
_POSITION = {
    "type": "object",
    "properties": {"line": {"type": "integer", "minimum": 1}, "column": {"type": "integer"}},
    "required": ["line"],
}
_RANGE = {
    "type": "object",
    "properties": {"start": _POSITION, "end": _POSITION},
    "required": ["start"],
}
_SEVERITY = {"enum": ["UNKNOWN_SEVERITY", "ERROR", "WARNING", "INFO", 0, 1, 2, 3]}
RDJSON_SCHEMA = {
    "type": "object",
    "properties": {
        "source": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "url": {"type": "string"}},
            "required": ["name"],
        },
        "severity": _SEVERITY,
        "diagnostics": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["message", "location"],
                "properties": {
                    "message": {"type": "string"},
                    "severity": _SEVERITY,
                    "location": {
                        "type": "object",
                        "required": ["path"],
                        "properties": {"path": {"type": "string"}, "range": _RANGE},
                    },
                    "code": {
                        "type": "object",
                        "properties": {"value": {"type": "string"}, "url": {"type": "string"}},
                    },
                    "suggestions": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {"range": _RANGE, "text": {"type": "string"}},
                            "required": ["range", "text"],
                        },
                    },
                },
            },
        },
    },
}
