"""Dataset validation for every post-training format: streaming, bounded, never crashing on any input.

Public surface::

    validate_file(path, *, kind=None, max_errors=50, tokenizer_path=None, max_length=None,
                  eval_path=None, progress=None, report_path=None) -> ValidationReport
    validate_files(paths, *, eval_path=None, kind=None, ...) -> list[ValidationReport]
    validate_rows(rows, *, kind=None, max_errors=50, ...) -> ValidationReport
    validate_document(doc, *, kind, max_errors=50) -> (ValidationReport, model or None)
    KINDS, KIND_INFO, CODES, load_schema(kind), schema_path(kind), estimate_tokens(text)
    KIND_ALIASES (export format names read as kinds: dpo -> trl.preference), canonical_kind(name), kinds_help()
    ValidationReport, Finding, Summary, LengthStats; ValidationReport.exit_code: 0 valid, 1 errors, 2 unreadable

Rules beyond JSON Schema and their sources: ``docs/dataset-validation.md``.
"""

from ._codes import CODES
from ._kinds import KIND_ALIASES, KIND_INFO, KINDS, KindInfo, canonical_kind, kinds_help
from ._openai_rules import RULES as OPENAI_RULES
from ._openai_rules import RULES_VERSION as OPENAI_RULES_VERSION
from ._report import Finding, LengthStats, Summary, ValidationReport
from ._rules import STRUCTURAL_CODES
from ._schemas import load_schema, schema_path
from ._service import DatasetService, DatasetValidateInput, DatasetValidateOutput
from ._validate import estimate_tokens, validate_document, validate_file, validate_files, validate_rows

__all__ = [
    "CODES",
    "DatasetService",
    "DatasetValidateInput",
    "DatasetValidateOutput",
    "KINDS",
    "KIND_ALIASES",
    "KIND_INFO",
    "KindInfo",
    "OPENAI_RULES",
    "OPENAI_RULES_VERSION",
    "STRUCTURAL_CODES",
    "Finding",
    "LengthStats",
    "Summary",
    "ValidationReport",
    "canonical_kind",
    "estimate_tokens",
    "kinds_help",
    "load_schema",
    "schema_path",
    "validate_document",
    "validate_file",
    "validate_files",
    "validate_rows",
]
