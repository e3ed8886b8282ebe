"""Dangerous shell commands in tool text: ``rm -rf /``, ``mkfs``, ``dd of=/dev/sda``, fork bombs,
``curl … | sh``, a container given its host's root, an account made administrator.

No real tool needs the model to wipe a disk or run a script fetched from the network: none of
20,783 real tools in the shared pools holds one of these commands. A tool whose purpose is
running commands may still *document* them ("commands such as rm -rf / are refused"), so
:func:`dangerous_command` reads the sentence around each command:

* a sentence that forbids, refuses, detects or warns ("never", "blocked", "refuses",
  "dangerous", "detects", "confirm", …) documents a guard: not counted;
* in a tool whose declared purpose is running commands or managing a machine (its name, title or
  first sentence says shell, terminal, command, exec, disk, install, pipeline, …) a command counts
  only when the model is told to run it (a clause that starts with "run", "execute", "paste", …,
  "you must", or a step: "before", "then", "required", …) outside an example ("e.g.", "such as",
  "for instance"): otherwise it documents what the tool runs;
* any other tool has no reason to name these commands at all, so one buried anywhere in its
  text counts, ordered or not, unless it is one example of what the tool looks for ("finds
  processes spawning ``curl | sh``, e.g."). A command on a line of its own counts as ordered when
  the line before it orders it ("Run this once:").

Deleting a folder of the home directory or the project (``rm -rf ~/projects``, ``rm -rf ./src``)
and force-pushing to main are ordinary enough to count only as steps the model is told to take
("then run …", "you must …", "after each call …").
"""

from __future__ import annotations

import re

from .lexicon import trie
from .decode import sentence_around

__all__ = ["dangerous_command", "version_text"]


_END = r"(?=[\s`'\";|&)]|$)"
_RM = (r"\brm\s+(?:-{1,2}[\w-]+\s+)*(?:-[a-z]*(?:r[a-z]*f|f[a-z]*r)[a-z]*|-r\s+-f|-f\s+-r|--recursive\s+--force"
       r"|--force\s+--recursive|-rf?\s+--no-preserve-root)\s+(?:--no-preserve-root\s+)?")
def _commands(*pairs: tuple[str, str]) -> tuple[tuple[tuple[str, ...], re.Pattern[str]], ...]:
    """(literals, regex) pairs: a regex is only searched in a text (lower-cased) holding one of its literals."""
    return tuple((tuple(lits.split("|")), re.compile(rx, re.IGNORECASE)) for lits, rx in pairs)


#: System folders: deleting one (or anything under it) breaks the machine.
_SYSTEM = r"/(?:etc|usr|var|home|boot|bin|sbin|lib|lib32|lib64|opt|root|srv|sys|dev|mnt|system|library|applications)"

#: Commands that destroy a machine, its backups or its defences, plant a way back in, or run code from
#: the network, whoever is told to run them.
_STRONG = _commands(
    ("rm ", rf"{_RM}(?:/\*?|~/?\*?|\$home/?\*?|\$\{{home\}}/?\*?|\*|\.\*?|\.\./?|{_SYSTEM}(?:/[^\s`'\";|&)]*)?"
            rf"|c:\\\\?){_END}"),
    ("mkfs", r"\bmkfs(?:\.\w+)?\s+(?:-\S+\s+)*/dev/"),
    ("/dev/", r"\bdd\s+[^\n]{0,80}?\bof=/dev/(?:sd|hd|nvme|xvd|vd|mmcblk|disk|mapper)"
              r"|>\s*/dev/(?:sd[a-z]|nvme\d|hd[a-z]|mmcblk\d)\b"
              r"|\b(?:shred|wipefs)\s+[^\n]{0,40}?/dev/(?:sd|hd|nvme|xvd|vd|mmcblk|disk)"),
    ("(){|() {", r":\s*\(\s*\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:"
                 r"|\b(\w+)\s*\(\s*\)\s*\{\s*\1\s*\|\s*\1\s*&\s*\}\s*;\s*\1\b"),
    ("curl|wget", r"\b(?:curl|wget)\b[^\n|]{0,200}\|\s*(?:sudo\s+)?(?:-\w+\s+)*(?:ba|z|da|k|fi)?sh\b"
                  r"|\b(?:curl|wget)\b[^\n|]{0,200}\|\s*(?:sudo\s+)?(?:python[23]?|perl|ruby|node)\b"
                  r"|\b(?:ba|z)?sh\s+(?:-c\s+)?[\"']?<\(\s*(?:curl|wget)\b"
                  r"|\b(?:ba|z)?sh\s+-c\s+[\"']\$\(\s*(?:curl|wget)\b"),
    ("iex|invoke-expression", r"\b(?:iex|invoke-expression)\s*\(?\s*(?:\(\s*)?(?:iwr|irm|invoke-webrequest"
                              r"|invoke-restmethod|new-object\s+(?:system\.)?net\.webclient)"),
    ("chmod|chown", rf"\bchmod\s+(?:-r\s+)?0?777\s+(?:/|{_SYSTEM}/?){_END}|\bchown\s+-r\s+\S+\s+/{_END}"
                    r"|\bchmod\s+(?:u\+s|[4-7][0-7]{3})\s+\S*/bin/(?:ba|z|da)?sh\b"),
    # a container that owns its host: the host's root mounted, or privileged in the host's process space
    ("docker|podman|nsenter", r"\b(?:docker|podman)\s+run\b[^\n]{0,200}?(?:(?:-v|--volume)[=\s]+/:/"
                              r"|--privileged\b[^\n]{0,120}?--pid[=\s]host\b|--pid[=\s]host\b[^\n]{0,120}?--privileged\b)"
                              r"|\bnsenter\s+(?:-\w+\s+)*-t\s*1\b"),
    ("c:\\", r"\bformat\s+c:|\b(?:del|erase)\s+(?:/[sfq]\s+)+[^\n]{0,20}?c:\\|\b(?:rd|rmdir)\s+(?:/[sq]\s+)+c:\\"),
    ("remove-item", r"\bremove-item\b[^\n]{0,60}?-recurse[^\n]{0,60}?(?:c:\\\s|c:\\$|~|\$home|\$env:userprofile)"),
    # backups and recovery: what ransomware deletes first
    ("vssadmin|wbadmin|bcdedit|wmic|cipher", r"\bvssadmin(?:\.exe)?\s+delete\s+shadows\b|\bwbadmin\s+delete\s+"
                                            r"(?:catalog|systemstatebackup|backup)\b|\bbcdedit\b[^\n]{0,40}?"
                                            r"recoveryenabled\s+no\b|\bwmic\s+shadowcopy\s+delete\b"
                                            r"|\bcipher\s+/w:"),
    ("find ", r"\bfind\s+(?:/|~/?|\$home)(?=\s)[^\n|;]{0,80}?(?:\s-delete\b|\s-exec\s+rm\b)"),
    # defences switched off
    ("setenforce|selinux|ufw|firewall|iptables|netsh|set-mppreference",
     r"\bsetenforce\s+0\b|\bselinux=disabled\b|\bufw\s+disable\b|\bsystemctl\s+(?:stop|disable|mask)\s+"
     r"(?:firewalld|ufw|apparmor|auditd)\b|\biptables\s+(?:-f|--flush)\b|\bnetsh\s+advfirewall\s+set\s+\w+"
     r"\s+state\s+off\b|\bset-mppreference\b[^\n]{0,40}?-disable\w*\s+(?:\$true|1)\b"),
    # a way back in: a key, a cron job or a shell profile line that fetches code
    ("authorized", r">>?\s*~?[\w/.$-]*\.ssh/authorized_keys\b"),
    ("nopasswd", r"\bnopasswd:\s*all\b"),
    ("crontab|bashrc|profile", r"\bcrontab\b[^\n]{0,120}?\b(?:curl|wget|nc|bash\s+-i)\b"
                               r"|\b(?:curl|wget|nc)\b[^\n]{0,160}?\|\s*crontab\b"
                               r"|\b(?:curl|wget)\b[^\n]{0,160}?>>\s*~?/?[\w/.$-]*\.(?:bashrc|zshrc|profile)\b"),
    ("config set dir", r"\bconfig\s+set\s+dir\s+\S*\.ssh\b"),
    ("/protection", r"-x\s+delete\s+\S*/branches/\S+/protection\b"),
)
#: Destructive in the wrong hands but ordinary in documentation (a database tool names ``DROP TABLE``):
#: counted only when the model is told to run one, and never in a tool whose own job is that action
#: (:data:`_OWN_JOB`).
_WEAK = _commands(
    ("rm ", rf"{_RM}(?:~/|\$home/|\./)[\w.*/-]+{_END}|{_RM}\.git{_END}"),
    ("git push", r"\bgit\s+push\s+(?:[^\n`]{0,40}?\s)?(?:-f|--force)\b(?!-with-lease)"),
    # "truncate" is also English ("Truncate after N chars"): the statement is TRUNCATE TABLE, or written in capitals
    ("drop |truncate|dropdatabase", r"\bdrop\s+(?:table|database|schema)\b|\btruncate\s+table\s+[\w.\"`]+"
                                    r"|\b(?-i:TRUNCATE)\s+[\w.\"`]+"
                                    r"|\bdropdatabase\s*\("),
    ("flushall|flushdb", r"\bflush(?:all|db)\b"),
    ("kubectl", r"\bkubectl\s+delete\s+(?:ns|namespaces?)\b|\bkubectl\s+delete\b[^\n`]{0,60}?\s--all\b"),
    ("destroy", r"\b(?:terraform|pulumi|tofu)\s+destroy\b"),
    ("aws |gsutil|az group", r"\baws\s+s3\s+(?:rm\b[^\n`]{0,80}?--recursive|rb\b[^\n`]{0,80}?--force)"
                             r"|\bgsutil\s+(?:-m\s+)?rm\s+-r\b|\baz\s+group\s+delete\b"
                             r"|\baws\s+ec2\s+terminate-instances\b"),
    ("chmod", r"\bchmod\s+(?:-r\s+)?0?777\b"),
    # a grant of everything: an account made administrator, superuser or cluster owner, root allowed in by SSH
    ("administratoraccess|roles/owner|cluster-admin|superuser|all privileges|permitrootlogin",
     r"\battach-(?:user|role|group)-policy\b[^\n]{0,300}?\badministratoraccess\b"
     r"|\badd-iam-policy-binding\b[^\n]{0,300}?\broles/owner\b"
     r"|\bclusterrolebinding\b[^\n]{0,200}?--clusterrole[=\s]cluster-admin\b"
     r"|\balter\s+(?:user|role)\s+\S+\s+(?:with\s+)?superuser\b|\bgrant\s+all\s+privileges\s+on\s+\*\.\*"
     r"|\bpermitrootlogin\s+yes\b"),
    # certificate checks switched off for every later connection; a bucket opened to anyone, to write or for every action
    ("unauthorized|httpsverify|sslverify|ssl",
     r"\bnode_tls_reject_unauthorized\s*=\s*['\"]?0\b|\bpythonhttpsverify\s*=\s*['\"]?0\b"
     r"|\bhttp\.sslverify\s*=?\s*['\"]?false\b|\bgit_ssl_no_verify\s*=\s*['\"]?(?:1|true)\b"
     r"|\bstrict-ssl\s*=?\s*['\"]?false\b"),
    ("public-read-write|principal", r"\bpublic-read-write\b"
                                    r"|\bprincipal\W{1,6}\*\W[^\n]{0,80}?\baction\W{1,6}s3:\*"),
)
#: A tool whose name holds one of these words, or whose first sentence starts with one, does that job
#: itself: its weak commands (``DROP TABLE`` in ``drop_table``, ``FLUSHALL`` in ``flush_database``)
#: document it.
_OWN_JOB = re.compile(
    r"\b(?:drop|drops|dropping|delete|deletes|deleting|remove|removes|removing|destroy|destroys|flush|flushes"
    r"|truncate|truncates|terminate|terminates|purge|purges|prune|prunes|wipe|wipes|reset|resets|push|pushes"
    r"|force-push\w*|chmod|permissions?|rm|rmdir|teardown|tear)\b", re.IGNORECASE)

#: Every literal above, as one search: most texts hold none (a literal must not hold "_", which
#: :func:`~jit.injection.lexicon.trie` reads as a space).
_GATE = re.compile(trie([lit for lits, _ in _STRONG + _WEAK for lit in lits]))
#: Options, which may hold guard words (``--no-preserve-root``, ``-auto-approve``).
_OPTIONS = re.compile(r"(?<!\S)--?[\w-]+")
#: Words that forbid, refuse, detect or warn: the sentence documents a guard.
_GUARD = re.compile(
    r"\b(?:never|cannot|can'?t|won'?t|not\s+(?:allowed|permitted|supported|possible|run|executed)|no\s+longer"
    r"|(?:do\s+not|don'?t|must\s+not|should\s+not|shouldn'?t|will\s+not)\s+(?:\w+\s+){0,2}?(?:run|execute|use|type"
    r"|paste|call|invoke|try|issue|enter|do)"
    r"|block|blocks|blocked|blocking|refuse|refuses|refused|reject|rejects|rejected"
    r"|deny|denies|(?<!access\s)(?<!permission\s)(?<!is\s)(?<!was\s)denied|deny-?list|blacklist\w*|disallow\w*|forbid\w*|prohibit\w*|prevent\w*"
    r"|protect(?:s|ed|ing)?\s+(?:against|from)|guard\w*|detect\w*|flag|flags|flagged|scan(?:s|ned|ning)?\s+for"
    r"|scanners?|warn\w*|dangerous"
    r"|destructive|malicious|suspicious|unsafe|harmful|risky|(?<!\bto\s)avoid\w*|disabled|refusal|safeguard\w*|sanitiz\w*"
    r"|confirm\w*|approv\w*|explain\w*)\b",
    re.IGNORECASE)
#: The same in other languages (matched anywhere: some scripts have no spaces).
_GUARD_I18N = re.compile(
    r"gefährlich|blockiert|verboten|gesperrt|peligros|bloquead|prohibid|dangereu|bloqué|interdit|refusé|pericolos"
    r"|bloccat|vietat|perigos|proibid|niebezpieczn|zablokowan|zabronion|odrzuc|tehlikeli|engellen|yasak|reddedil"
    r"|опасн|запрещ|блокир|отклон|危险|危險|拒绝|拒絕|禁止|阻止|危険|拒否|위험|거부|금지|차단|خطر|ممنوع|محظور",
    re.IGNORECASE)
#: An order to the model to run something: an imperative at the start of a clause, or "you must".
_ORDER = re.compile(
    r"(?:^|[.,:;!?\n(]\s*|\b(?:please|then|next|first|also|now|always|immediately|must|should|shall|and)\s+)"
    r"(?:run|execute|exec|invoke|call|type|enter|issue|launch|trigger|paste|pipe|append|prepend|prefix|add|use"
    r"|perform|clean|wipe|reset|clear|install|fix|repair|start|set|export|apply|disable)\b"
    r"|\byou\s+(?:must|should|shall|need\s+to|have\s+to|are\s+(?:required|expected|asked)\s+to)\b"
    r"|\b(?:make|be)\s+sure\s+to\b|\bremember\s+to\b|\b(?:is|are)\s+(?:required|mandatory)\b"
    r"|\bby\s+(?:running|executing|issuing|calling|typing)\b|\bfollowed\s+by\b"
    # a requirement in the passive: "every job also needs the line `…` appended", "it requires `…` added"
    r"|\b(?:needs?|requires?)\b[^\n]{0,160}?\b(?:appended|added|prepended|inserted|installed|run|executed)\b"
    r"|\b(?:finish|end|conclude|wrap\s+up|start|begin)\s+with\b|\b(?:agents?|assistants?|models?)\s+(?:should"
    r"|must|need\s+to)\b|\b(?:fix|solution|workaround|remedy|way|step)\s+is\s+to\b"
    r"|\b(?:the\s+)?(?:fix|solution|workaround|remedy)\s*:",
    re.IGNORECASE)
#: The same order in other languages: "wykonaj", "ejecuta", "führe … aus", "実行して".
_ORDER_I18N = re.compile(
    r"\b(?:ejecuta|ejecute|ejecutar|corre|exécute[rz]?|lance[rz]?|führe|fuhre|esegui|eseguire|execute|executar"
    r"|rode|voer|uitvoeren|wykonaj|uruchom|çalıştır|calistir|выполни|запусти|выполните|запустите|chạy|jalankan"
    r"|kör|kjør|kør|spusť|proveď|εκτέλεσε|rulează|futtasd)\b|実行して|実行する|执行|運行|运行|실행|نفذ|شغّل|चलाएं",
    re.IGNORECASE)
#: An order right before the command, not negated: "…, run `sudo ufw disable` before …".
_DIRECT = re.compile(
    r"(?:^|[.,:;!?\n(]\s*|\b(?:please|then|now|first|just|simply|and|also|always)\s+)"
    r"(?:run|execute|exec|type|paste|enter|issue)\s*:?\s*[`'\"]?\s*(?:sudo\s+)?$", re.IGNORECASE)
#: Steps and conditions around a command: with a command that wipes or fetches, an order too.
_STEP = re.compile(r"\b(?:must|should|shall|need\s+to|needs\s+to|have\s+to|has\s+to|required|before|after"
                   r"|afterwards|then|first|finally|once|whenever|every\s+time|always)\b", re.IGNORECASE)
#: Examples in documentation: a command runner showing what it can run.
_EXAMPLE = re.compile(r"\b(?:e\.g\.|i\.e\.)|\b(?:eg|for\s+example|for\s+instance|such\s+as|like|example|examples"
                      r"|including)\b", re.IGNORECASE)
#: What a tool that runs commands calls itself.
_RUNNER = re.compile(
    r"\b(?:shell|terminal|bash|zsh|powershell|cmd|command|commands|exec|execute|executes|executing|execution"
    r"|cli|console|script|scripts|ssh|subprocess|sandbox|repl|run_command|runcommand|sudo|disk|disks|partition\w*"
    r"|format|formats|formatting|install|installs|installer|installing|bootstrap\w*|provision\w*|pipeline|pipelines"
    r"|ci|build|builds|job|jobs|workflow|workflows|container|containers|docker)\b|_(?:exec|shell|cmd)\b",
    re.IGNORECASE)


def _runner(name: str, purpose: str) -> bool:
    """Whether a tool named ``name`` whose first sentence is ``purpose`` runs commands."""
    return bool(_RUNNER.search(name.replace("_", " ").replace("-", " ")) or _RUNNER.search(purpose))


def dangerous_command(text: str, name: str = "", purpose: str = "", low: str | None = None) -> bool:
    """Whether ``text`` (a tool's title, description and schema strings) tells the model to run a
    dangerous command, or names one where a tool named ``name`` (first sentence ``purpose``)
    has no business to; see the module's docstring."""
    low = text.lower() if low is None else low
    if not _GATE.search(low):
        return False
    found = [(m, strong) for commands, strong in ((_STRONG, True), (_WEAK, False)) for lits, rx in commands
             if any(lit in low for lit in lits) for m in rx.finditer(text)]
    if not found:
        return False
    runner = _runner(name, purpose)
    own_job = bool(_OWN_JOB.search(name.replace("_", " ").replace("-", " ")) or _OWN_JOB.match(purpose.lstrip()))
    for m, strong in found:
        if not strong and own_job:
            continue
        sentence = sentence_around(text, m.start(), m.end())
        # guard words count around the command, not inside it ("--no-preserve-root", ".../protection")
        # (other languages are read in ASCII text too: "na koniec uruchom", "jalankan")
        around = sentence.replace(m.group(), " ")
        # a guard word elsewhere in the sentence ("because rules often block the tools, run `ufw disable`") does
        # not undo an order given right before the command
        direct = bool(_DIRECT.search(text, max(0, m.start() - 60), m.start()))
        if not direct and (_GUARD.search(_OPTIONS.sub(" ", around)) or _GUARD_I18N.search(sentence)):
            continue
        lead = _lead_in(text, m.start(), sentence)
        told = f"{lead}\n{sentence}" if lead else sentence
        ordered = bool(_ORDER.search(told) or _STEP.search(told) or _ORDER_I18N.search(told))
        if runner:  # documentation of what the tool runs, unless the model is told to run it
            if ordered and not _EXAMPLE.search(told):
                return True
        # any other tool: a command it names counts, unless it is one example of what the tool looks for
        # ("finds events such as processes spawning `curl | sh`") and nobody is told to run it
        elif ordered or (strong and not _EXAMPLE.search(around)):
            return True
    return False


def _lead_in(text: str, start: int, sentence: str) -> str:
    """The line that introduces the command's line as a code block ("Run the following once:"), when the
    text before ``sentence`` (found around ``start``) ends with a colon; else ``""``."""
    left = text.rfind(sentence, 0, start + len(sentence))
    before = text[:left].rstrip() if left >= 0 else ""
    return before.rsplit("\n", 1)[-1] if before.endswith(":") else ""


def version_text() -> str:
    """What decides this module's findings, for ``HOSTILE_RULES_VERSION``."""
    return "\n".join((_GATE.pattern, *(f"{lits} {rx.pattern}" for lits, rx in _STRONG + _WEAK), _OPTIONS.pattern,
                      _GUARD.pattern, _GUARD_I18N.pattern, _ORDER.pattern, _ORDER_I18N.pattern, _STEP.pattern,
                      _EXAMPLE.pattern, _RUNNER.pattern, _OWN_JOB.pattern, _DIRECT.pattern, "lead-in",
                      "example-in-other-tools"))
