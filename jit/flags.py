"""The names of the hostile-text flags: stable (the Datalog policy and users' overrides match
on them), and cheap to import (a config names them without loading the injection rules).
What each means: :mod:`jit.injection.detect`, which sets them."""

from __future__ import annotations

FLAG_IGNORE_PREVIOUS = "instruction:ignore_previous"
FLAG_ALWAYS_SELECT = "instruction:always_select"
FLAG_ROLE_OVERRIDE = "instruction:role_override"
FLAG_CONCEAL = "instruction:conceal"
FLAG_EXFILTRATE = "instruction:exfiltrate"
FLAG_CROSS_TOOL = "instruction:cross_tool"
FLAG_SHADOWING = "instruction:shadowing"
FLAG_EXFILTRATE_URL = "instruction:exfiltrate_url"
FLAG_MUST_CALL_FIRST = "instruction:must_call_first"
FLAG_OUTPUT_POISONING = "instruction:output_poisoning"
FLAG_FALSE_AUTHORITY = "instruction:false_authority"
FLAG_PERSISTENCE = "instruction:persistence"
FLAG_ENCODED = "instruction:encoded"
FLAG_DANGEROUS_COMMAND = "instruction:dangerous_command"
FLAG_LLM_REPORTED = "instruction:llm_reported"
FLAG_CLASSIFIER = "instruction:classifier"
FLAG_HIDDEN_UNICODE = "hidden_unicode"
FLAG_HOMOGLYPH = "homoglyph"
FLAG_OVERSIZED = "oversized_description"

#: Every flag that says "this text instructs the model" starts with this.
INSTRUCTION_PREFIX = "instruction:"

#: Every flag jit can set, in the order they are reported.
HOSTILE_FLAGS: tuple[str, ...] = (
    FLAG_IGNORE_PREVIOUS,
    FLAG_ALWAYS_SELECT,
    FLAG_ROLE_OVERRIDE,
    FLAG_CONCEAL,
    FLAG_EXFILTRATE,
    FLAG_CROSS_TOOL,
    FLAG_SHADOWING,
    FLAG_EXFILTRATE_URL,
    FLAG_MUST_CALL_FIRST,
    FLAG_OUTPUT_POISONING,
    FLAG_FALSE_AUTHORITY,
    FLAG_PERSISTENCE,
    FLAG_ENCODED,
    FLAG_DANGEROUS_COMMAND,
    FLAG_LLM_REPORTED,
    FLAG_CLASSIFIER,
    FLAG_HIDDEN_UNICODE,
    FLAG_HOMOGLYPH,
    FLAG_OVERSIZED,
)
