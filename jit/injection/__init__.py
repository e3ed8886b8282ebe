"""Prompt injection in tool text: a tool's name, title, description and schema in, flags out.

The public entry points are :func:`jit.injection.detect.detect_hostile` (one tool) and
:func:`~jit.injection.detect.detect_hostile_many` (a batch, the learned model scoring in one go),
:func:`~jit.injection.detect.strip_instructions` (a description without its orders, for the offline
analyzer) and :data:`~jit.injection.detect.HOSTILE_RULES_VERSION` (changes with any rule or the
model, so cached analyses are re-checked). The flag names are the stable vocabulary of
:mod:`jit.flags` (core: the config validates ``trust_flags`` and the policy matches on them without
loading this package). The package needs only the core (models, text, flags, jsonrpc).

How a text is read, in :mod:`~jit.injection.detect`'s order:

* characters and size: hidden and look-alike characters, an oversized description (``detect``, ``lookalike``);
* phrase rules, regexes over English word order: orders to the model (``rules``), about other tools
  and outside addresses (``tool_rules``), about the model's answers, approvals and memory
  (``behaviour``), and in other languages (``i18n_rules``);
* intents: a sentence holding every cue of one intent, in 29 languages (``intent``; the cues are
  ``cues``, ``behaviour_cues`` and what takes an intent back, ``unless_cues``, built by ``lexicon``);
* what hides beneath the wording: encodings, letter games and strings cut into joined pieces read decoded
  (``decode``, ``obfuscation``), dangerous commands (``commands``), the destinations a parameter offers as its
  default or enum (``params``) and private data put into a parameter that does not ask for it (``slots``);
* the learned model (``model``, its arrays ``injection_model.npz``, trained by
  ``python -m bench.train_injection_model``), which flags what the rules miss and weighs their
  wording findings (on the whole text, and on the line that gives the order where a long text dilutes it).

**Where a new hostile phrase goes.** As a word of the idea it expresses, in ``cues.py`` (or
``behaviour_cues.py`` for answers, approvals and urgency): a word added to a cue works in every
word order and every intent that uses that idea, in any language. Only a shape no combination of
cues can say (a fixed English construction, a token such as ``<|im_start|>``) is a phrase rule in
``rules.py``, ``tool_rules.py`` or ``behaviour.py`` by what it is about. Wording that must *not*
count goes into ``unless_cues.py``. Then ``python -m bench.injection_corpus`` shows what it costs
on ~20,000 real tools, and retraining the model (``python -m bench.train_injection_model
--write``) lets it weigh the new findings.
"""
