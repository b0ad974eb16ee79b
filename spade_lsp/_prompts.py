"""Reading prompt files: validation of what a user might point spade at, YAML front matter, and the messages a
prompt holds.

A prompt file is one of three kinds (:func:`prompt_kind`, by its name):

- ``text`` (``.prompt``, ``.prompt.md``, ``.prompt.txt``): one user message, unless its body starts with a role
  line (``system:``), in which case it is role sections as Prompty writes them;
- ``prompty`` (``.prompty``): Prompty's front matter and role sections, templated with Jinja2 by default (text
  before the first role line is the system message, as Prompty reads it);
- ``messages`` (``.prompt.json``, ``.prompt.yaml``, ``.prompt.yml``): a list of OpenAI-style messages, or a
  mapping with ``messages`` and settings beside it.

Whatever the kind, :class:`PromptText` keeps the file's offsets: ``body`` is the text with everything that is not
a message's wording (front matter, role lines, JSON/YAML syntax) blanked to spaces, line breaks kept, so the
sentence splitter, the history and the editor work on ``body`` and their ranges hold in the file.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Final, Literal

import yaml

from spade_lsp._files import decode_text, format_size, read_limited
from spade_lsp.errors import ConfigError, FrontMatterError, PromptFileError

PromptKind = Literal["text", "prompty", "messages"]
Templating = Literal["braces", "jinja2"]

MESSAGE_SUFFIXES: Final = (".prompt.json", ".prompt.yaml", ".prompt.yml")
ROLES: Final = ("system", "developer", "user", "assistant", "tool", "function")

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?\r?\n)?---[ \t]*(\r?\n|\Z)", re.DOTALL)
# Prompty's role boundary: a line holding only a role, optionally "# " before it and "[name=...]" after it
_ROLE_LINE = re.compile(
    r"^[^\S\r\n]*#?[^\S\r\n]*(" + "|".join(ROLES) + r")(?:\[[^\]\r\n]*\])?[^\S\r\n]*:[^\S\r\n]*\r?$",
    re.IGNORECASE | re.MULTILINE,
)
_NOT_BREAK = re.compile(r"[^\r\n]")


PLACEHOLDER_PATTERN = re.compile(r"\{\{\s*([A-Za-z_]\w*)\s*\}\}|\{([A-Za-z_]\w*)\}")
"""``{var}`` and ``{{var}}`` (group 1 or 2 is the name): what spade reads as a placeholder everywhere."""


def placeholders_of(text: str) -> list[str]:
    """``{var}`` and ``{{var}}`` names in order of first appearance."""
    names: dict[str, None] = {}
    for match in PLACEHOLDER_PATTERN.finditer(text):
        names.setdefault(match.group(1) or match.group(2), None)
    return list(names)


def render_prompt(template: str, inputs: Mapping[str, Any]) -> tuple[str, list[str]]:
    """The template with ``{var}``/``{{var}}`` filled from ``inputs``; names missing from inputs are listed."""
    missing: list[str] = []

    def fill(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name not in inputs:
            missing.append(name)
            return match.group(0)
        return str(inputs[name])

    return PLACEHOLDER_PATTERN.sub(fill, template), missing


def prompt_kind(path: Path | str) -> PromptKind:
    """What a prompt file holds, by its name (see the module's docstring)."""
    name = str(path).lower()
    if name.endswith(".prompty"):
        return "prompty"
    if name.endswith(MESSAGE_SUFFIXES):
        return "messages"
    return "text"


@dataclass(frozen=True, slots=True)
class MessageTemplate:
    """One message of a prompt, before its placeholders are filled: ``content`` is what is sent (a JSON or YAML
    string decoded), ``start``/``end`` where its wording lies in the file."""

    role: str
    content: str
    start: int
    end: int
    name: str | None = None
    header: int | None = None
    """Where the message's section begins (its role line, its list entry); None: at ``start``."""


@dataclass(frozen=True, slots=True)
class PromptText:
    """A prompt's full text, and ``body``: the same text with everything but its messages' wording blanked (same
    length and line breaks), so sentence offsets and ranges found in ``body`` are valid in ``text``."""

    text: str
    body: str
    front_matter: dict[str, Any] = field(default_factory=dict)
    kind: PromptKind = "text"
    messages: tuple[MessageTemplate, ...] = ()
    templating: Templating = "braces"
    is_chat: bool = False
    """Whether roles are written out (role lines, a message list), not one implicit user message."""

    def message_index(self, offset: int) -> int | None:
        """The index of the message whose wording holds ``offset``, or None (front matter, a role line)."""
        for index, message in enumerate(self.messages):
            if message.start <= offset < message.end:
                return index
        return None

    def message_label(self, index: int) -> str:
        """``system``, ``user``, or ``user 2`` when several messages share a role: how hovers name a message."""
        role = self.messages[index].role
        same = [i for i, m in enumerate(self.messages) if m.role == role]
        return role if len(same) == 1 else f"{role} {same.index(index) + 1}"


def parse_prompt(text: str, *, source: str = "<prompt>", kind: PromptKind = "text") -> PromptText:
    """Split a prompt file into front matter and messages, keeping offsets intact (see :class:`PromptText`).

    Invalid front matter or message lists raise :class:`~spade_lsp.errors.ConfigError` naming ``source``."""
    if kind == "messages":
        return _parse_message_list(text, source)
    front_matter, body = _split_front_matter(text, source)
    templating = _templating(front_matter, kind, source)
    roles = list(_ROLE_LINE.finditer(body))
    first_words = re.search(r"\S", body)
    starts_with_role = bool(roles) and first_words is not None and first_words.start() == roles[0].start(1)
    if not roles or not (kind == "prompty" or starts_with_role):
        # one user message, as every prompt was sent before chat prompts (a Prompty file without role lines too)
        message = MessageTemplate("user", body.strip(), 0, len(text))
        wording = _blank_jinja_tags(body, templating)
        return PromptText(text, wording, front_matter, kind, (message,) if body.strip() else (), templating)
    messages: list[MessageTemplate] = []
    lead = body[: roles[0].start()]
    if lead.strip():  # Prompty: what precedes the first role line is the system message
        messages.append(MessageTemplate("system", lead.strip(), 0, roles[0].start()))
    for index, match in enumerate(roles):
        end = roles[index + 1].start() if index + 1 < len(roles) else len(text)
        name = re.search(r"\[\s*name\s*=\s*\"?([^\",\]]*)", match.group(0))
        messages.append(
            MessageTemplate(
                match.group(1).lower(),
                body[match.end() : end].strip(),
                match.end(),
                end,
                name.group(1) if name else None,
                match.start(),
            )
        )
    for match in roles:  # role lines are markup, not wording
        body = body[: match.start()] + _NOT_BREAK.sub(" ", match.group(0)) + body[match.end() :]
    return PromptText(text, _blank_jinja_tags(body, templating), front_matter, kind, tuple(messages), templating, True)


_JINJA_TAG = re.compile(r"\{%.*?%\}|\{#.*?#\}", re.DOTALL)


_TOP_KEY = re.compile(r"[^\s#\-\]},]|-[^\s-]")
_MESSAGES_KEY = re.compile(r"""(["']?)messages\1[ \t]*:(?:[ \t]|$)""")
#: What a prompt's own settings are called in messages, by the prompt's kind.
SETTINGS_SOURCE_NAMES: Final[dict[PromptKind, str]] = {
    "text": "front matter",
    "prompty": "front matter",
    "messages": "the settings beside messages",
}


def settings_block(text: str | None, kind: PromptKind) -> str | None:
    """The part of a prompt's text that holds its own settings, as text that names them (what
    an editor caches on), or None when it holds none.

    Front matter: the ``---`` block. A message list: the top-level entries other than ``messages``, found
    without parsing the messages (a keystroke in a long conversation re-reads a few lines, not the file); a list
    of messages with nothing beside it, and JSON that does not parse (half-typed), hold none."""
    if not text:
        return None
    if kind != "messages":
        match = _FRONT_MATTER.match(text) if text.startswith("---") else None
        return match.group(0) if match is not None else None
    stripped = text.lstrip("\ufeff \t\r\n")
    if stripped.startswith("["):
        return None
    if stripped.startswith("{"):  # JSON (or a YAML flow mapping): parsed whole, its other keys kept
        try:
            loaded = json.loads(stripped)
        except ValueError:
            loaded = _yaml_or_none(stripped)
        if not isinstance(loaded, dict):
            return None
        others = {str(key): value for key, value in loaded.items() if key != "messages"}
        return json.dumps(others, sort_keys=True, default=str) if others else None
    kept: list[str] = []
    keep = False
    for line in text.splitlines(keepends=True):
        if line.rstrip() in ("---", "...") or line.startswith("%"):
            keep = False  # a document marker or a directive: never part of an entry
            continue
        if _TOP_KEY.match(line):
            keep = _MESSAGES_KEY.match(line) is None
        if keep:
            kept.append(line)
    block = "".join(kept)
    return block if block.strip() else None


def _yaml_or_none(text: str) -> Any:
    try:
        return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # libyaml: per keystroke
    except (yaml.YAMLError, RecursionError):
        return None


def block_settings(block: str, kind: PromptKind, *, source: str | None = None) -> dict[str, Any]:
    """The mapping in a block that :func:`settings_block` found: front matter that is not a YAML mapping raises
    :class:`~spade_lsp.errors.ConfigError` naming ``source`` (the prompt); a message list's half-typed entries
    hold none."""
    if kind != "messages":
        return _split_front_matter(block, source or SETTINGS_SOURCE_NAMES[kind])[0]
    if block.startswith("{"):
        loaded: Any = json.loads(block)
    else:
        loaded = _yaml_or_none(block)
    return dict(loaded) if isinstance(loaded, dict) else {}


def own_settings(text: str | None, kind: PromptKind, *, source: str | None = None) -> dict[str, Any]:
    """A prompt's own settings, unfiltered: its front matter, or for a message list the keys beside
    ``messages`` (see :func:`spade_lsp.config.resolve` for which of them are settings)."""
    block = settings_block(text, kind)
    return {} if block is None else block_settings(block, kind, source=source)


def _blank_jinja_tags(body: str, templating: Templating) -> str:
    """Jinja2 statements and comments (``{% if x %}``, ``{# note #}``) are markup, not wording: blanked, so the
    sentences around them read as sentences (``{{ x }}`` placeholders stay, as ``{x}`` ones do)."""
    if templating != "jinja2" or "{" not in body:
        return body
    return _JINJA_TAG.sub(lambda match: _NOT_BREAK.sub(" ", match.group(0)), body)


def _split_front_matter(text: str, source: str) -> tuple[dict[str, Any], str]:
    """The front matter (``---`` ... ``---`` at the very top) as a mapping, and the text with it blanked."""
    match = _FRONT_MATTER.match(text)
    if not match:
        return {}, text
    loaded = _load_yaml(match.group(1) or "", f"{source}: invalid YAML front matter", FrontMatterError)
    if loaded is None:
        loaded = {}
    if not isinstance(loaded, dict):
        raise FrontMatterError(f"{source}: front matter must be a mapping of settings, not {type(loaded).__name__}")
    return loaded, _NOT_BREAK.sub(" ", match.group(0)) + text[match.end() :]


def _load_yaml(text: str, what: str, error_class: type[ConfigError] = ConfigError) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise error_class(f"{what}: {error}".splitlines()[0]) from error
    except RecursionError as error:
        raise error_class(f"{what}: nested too deeply") from error


def _templating(front_matter: Mapping[str, Any], kind: PromptKind, source: str) -> Templating:
    """Jinja2 for Prompty (its default, ``template: jinja2``), or where front matter asks for it; ``{x}`` and
    ``{{x}}`` placeholders otherwise (Prompty's ``mustache`` templates fill the same way)."""
    chosen = front_matter.get("template")
    if isinstance(chosen, Mapping):
        chosen = chosen.get("format", chosen.get("type"))
    if chosen is None:
        return "jinja2" if kind == "prompty" else "braces"
    value = str(chosen).lower()
    if value in ("jinja2", "jinja"):
        return "jinja2"
    if value in ("mustache", "fstring", "f-string", "braces"):
        return "braces"
    raise ConfigError(f"{source}: template: {chosen!r} is not a template format spade knows (jinja2, mustache)")


def prompty_sample(front_matter: Mapping[str, Any], folder: Path, *, source: str) -> dict[str, Any] | None:
    """A Prompty file's sample inputs: ``sample`` (a mapping, or a JSON file: ``${file:sample.json}`` or a
    path, relative to the prompt), else each input's own ``sample`` under ``inputs``; None when it has none."""
    sample = front_matter.get("sample")
    if isinstance(sample, str):
        name = re.fullmatch(r"\$\{file:(.+)\}", sample.strip())
        path = (folder / (name.group(1) if name else sample.strip())).resolve()
        if not path.is_relative_to(folder.resolve()):  # its inputs are sent to the model: no file from elsewhere
            raise ConfigError(
                f"{source}: sample: {sample} is outside the prompt's folder; keep the sample file beside it"
            )
        from spade_lsp._files import MAX_DATA_BYTES, read_limited_text

        try:
            sample = json.loads(
                read_limited_text(path, limit=MAX_DATA_BYTES, what="a Prompty sample", error=ConfigError)
            )
        except json.JSONDecodeError as error:
            raise ConfigError(f"{source}: sample: {path} is not JSON ({error})") from error
    if isinstance(sample, Mapping):
        return {str(key): value for key, value in sample.items()}
    if sample is not None:
        raise ConfigError(f"{source}: sample must be a mapping of inputs or a JSON file's name")
    inputs = front_matter.get("inputs")
    if isinstance(inputs, Mapping):
        found = {
            str(name): spec["sample"] for name, spec in inputs.items() if isinstance(spec, Mapping) and "sample" in spec
        }
        return found or None
    return None


# -- message lists (.prompt.json, .prompt.yaml) -----------------------------------------------------------------

_ESCAPE = re.compile(r"\\(?:x[0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|\r\n|.|\n)", re.DOTALL)


def _parse_message_list(text: str, source: str) -> PromptText:
    """A list of ``{role, content}`` mappings (or a mapping with ``messages`` and settings), with each content
    string's wording located in the file through the YAML composer's marks (JSON is read the same way)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)(text)  # libyaml when present: 10x faster
    try:
        root = loader.get_single_node()  # one parse: the nodes give positions, the document is built from them
        loaded = loader.construct_document(root) if root is not None else None
    except yaml.YAMLError as error:
        raise ConfigError(f"{source}: invalid message list: {error}".splitlines()[0]) from error
    except RecursionError as error:
        raise ConfigError(f"{source}: invalid message list: nested too deeply") from error
    finally:
        loader.dispose()
    front_matter: dict[str, Any] = {}
    items_node: yaml.Node | None = root
    items: Any = loaded
    if isinstance(loaded, dict):
        if "messages" not in loaded:
            raise ConfigError(f"{source}: a mapping of messages needs a `messages` list")
        front_matter = {str(k): v for k, v in loaded.items() if k != "messages"}
        items = loaded["messages"]
        assert isinstance(root, yaml.MappingNode)
        items_node = next(value for key, value in root.value if key.value == "messages")
    if not isinstance(items, list) or not items:
        raise ConfigError(f"{source}: expected a non-empty list of messages ({{role, content}} mappings)")
    assert isinstance(items_node, yaml.SequenceNode)
    body = [" " if ch not in "\r\n" else ch for ch in text]
    messages: list[MessageTemplate] = []
    for number, (item, node) in enumerate(zip(items, items_node.value, strict=True), 1):
        where = f"{source}: message {number} (line {node.start_mark.line + 1})"
        if not isinstance(item, dict) or not isinstance(node, yaml.MappingNode):
            raise ConfigError(f"{where}: expected a mapping with `role` and `content`")
        role, content = item.get("role"), item.get("content")
        if not isinstance(role, str) or role.lower() not in ROLES:
            raise ConfigError(f"{where}: `role` must be one of {', '.join(ROLES)}")
        if not isinstance(content, str):
            raise ConfigError(f"{where}: `content` must be text (parts and images are not supported)")
        value_node = next((value for key, value in node.value if key.value == "content"), None)
        if value_node is None:  # written through a merge key (`<<: *base`): sent, but not located in the file
            start = end = node.start_mark.index
        else:
            start, end = value_node.start_mark.index, value_node.end_mark.index
            body[start:end] = _wording(text[start:end], value_node.style)
        name = item.get("name")
        messages.append(
            MessageTemplate(
                role.lower(), content, start, end, str(name) if name is not None else None, node.start_mark.index
            )
        )
    templating = _templating(front_matter, "messages", source)
    wording = _blank_jinja_tags("".join(body), templating)
    return PromptText(text, wording, front_matter, "messages", tuple(messages), templating, True)


def _decoded(escape: str) -> str:
    """The character an escape (``\\u00e9``, ``\\"``) stands for, where the sentence splitter can read it: a
    printable character, else a space (a line break, a tab, half of a surrogate pair)."""
    code = escape[1:]
    character = chr(int(code[1:], 16)) if code[:1] in ("x", "u", "U") and len(code) > 1 else code
    return character if len(character) == 1 and character.isprintable() and not character.isspace() else " "


def _wording(raw: str, style: str | None) -> list[str]:
    """A scalar as written, with its syntax (quotes, escapes, block indicators, indentation) blanked and its
    line breaks kept: what the sentence splitter reads in place of the decoded string."""
    out = list(raw)
    if style in ("|", ">"):
        header = raw.find("\n")
        lines = raw[header + 1 :].split("\n") if header >= 0 else []
        indent = min((len(line) - len(line.lstrip(" ")) for line in lines if line.strip()), default=0)
        for i in range(header if header >= 0 else len(raw)):
            out[i] = " "
        offset = header + 1
        for line in lines:
            for i in range(offset, offset + min(indent, len(line))):
                out[i] = " "
            offset += len(line) + 1
    elif style == '"':
        out[0] = out[-1] = " "
        for match in _ESCAPE.finditer(raw, 1, len(raw) - 1):
            kept = _decoded(match.group(0))
            for i in range(match.start(), match.end()):
                out[i] = " " if raw[i] not in "\r\n" else raw[i]
            if raw[match.end() - 1] not in "\r\n":
                out[match.end() - 1] = kept
    elif style == "'":
        out[0] = out[-1] = " "
        for match in re.finditer("''", raw[1:-1]):
            out[match.start() + 1] = " "
    return out


# -- rendering ------------------------------------------------------------------------------------------------

Message = dict[str, str]


def render_messages(
    parsed: PromptText, inputs: Mapping[str, Any], *, source: str = "<prompt>"
) -> tuple[list[Message], list[str]]:
    """The messages as sent for one example: placeholders filled from ``inputs`` (Jinja2 or ``{x}``, see
    :class:`PromptText`), and the names ``inputs`` lacked (left as written)."""
    missing: dict[str, None] = {}
    rendered: list[Message] = []
    for message in parsed.messages:
        if parsed.templating == "jinja2":
            content, lacking = _render_jinja(message.content, inputs, f"{source}: the {message.role} message")
        else:
            content, lacking = render_prompt(message.content, inputs)
        missing.update(dict.fromkeys(lacking))
        entry = {"role": message.role, "content": content}
        if message.name:
            entry["name"] = message.name
        rendered.append(entry)
    return rendered, list(missing)


def render_conversation(
    parsed: PromptText, inputs: Mapping[str, Any], *, source: str = "<prompt>"
) -> tuple[str, list[Message], list[str]]:
    """What a check or a judge is given for one example: the rendered prompt as text (see
    :func:`conversation_text`), the rendered messages, and the names ``inputs`` lacked."""
    messages, missing = render_messages(parsed, inputs, source=source)
    return conversation_text(messages), messages, missing


def conversation_text(messages: Sequence[Mapping[str, str]]) -> str:
    """Messages as one string, for checks that take the prompt as text: a single user message is its content
    (as before chat prompts), a conversation is its role sections (``system:`` lines, as Prompty writes them)."""
    if len(messages) == 1 and messages[0].get("role") == "user":
        return messages[0].get("content", "")
    return "\n\n".join(f"{m.get('role', 'user')}:\n{m.get('content', '')}" for m in messages)


def template_placeholders(parsed: PromptText) -> list[str]:
    """The input names the messages use, in order of first use: Jinja2's undeclared variables (loop variables
    and ``set`` names excluded), or ``{x}``/``{{x}}`` names."""
    names: dict[str, None] = {}
    for message in parsed.messages:
        if parsed.templating == "jinja2":
            names.update(dict.fromkeys(_jinja_names(message.content)))
            names.update(dict.fromkeys(_SINGLE_BRACE.findall(message.content)))
        else:
            names.update(dict.fromkeys(placeholders_of(message.content)))
    return list(names)


class _Kept(threading.local):
    """The inputs a render printed but lacked, per thread (renders share one environment and compiled templates)."""

    names: list[str]

    def __init__(self) -> None:
        self.names = []


_KEPT = _Kept()


@lru_cache(maxsize=1)
def _environment() -> Any:
    """A sandboxed Jinja2 environment (a template cannot reach Python internals) in which a missing input renders
    as written (``{{ name }}``), as ``{x}`` placeholders do, and is noted in ``_KEPT``."""
    from jinja2 import ChainableUndefined
    from jinja2.sandbox import SandboxedEnvironment

    class _KeptAsWritten(ChainableUndefined):
        def __str__(self) -> str:
            if not self._undefined_name:
                return ""
            _KEPT.names.append(self._undefined_name)
            return f"{{{{ {self._undefined_name} }}}}"

    return SandboxedEnvironment(undefined=_KeptAsWritten, keep_trailing_newline=True, autoescape=False)


@lru_cache(maxsize=256)
def _compiled(template: str) -> Any:
    """A message's template compiled once (sampling renders it for every example and sample)."""
    return _environment().from_string(template)


@lru_cache(maxsize=256)
def _jinja_names(template: str) -> tuple[str, ...]:
    """The inputs a Jinja2 template uses, in order of first use (memoised: the editor asks on every keystroke)."""
    from jinja2 import TemplateSyntaxError, meta

    try:
        parsed = _environment().parse(template)
    except TemplateSyntaxError:
        return ()
    found = meta.find_undeclared_variables(parsed)
    ordered: dict[str, None] = {}
    for name in re.findall(r"[A-Za-z_]\w*", template):
        if name in found:
            ordered.setdefault(name, None)
    return tuple(ordered)


# ``{name}`` (not ``{{name}}``): a placeholder in every template format spade reads, Jinja2 included
_SINGLE_BRACE = re.compile(r"(?<!\{)\{([A-Za-z_]\w*)\}(?!\})")


def _render_jinja(template: str, inputs: Mapping[str, Any], where: str) -> tuple[str, list[str]]:
    """The template rendered, and the inputs it printed but lacked (one only tested in ``{% if %}`` is optional).
    ``{name}`` placeholders are filled too (as ``{{ name }}``), since spade reads both forms everywhere."""
    kept: list[str] = []
    _KEPT.names = []
    singles = _SINGLE_BRACE.findall(template)
    if singles:
        template = _SINGLE_BRACE.sub(
            lambda m: f"{{{{ {m.group(1)} }}}}" if m.group(1) in inputs else m.group(0), template
        )
        kept += [name for name in singles if name not in inputs]
    try:
        rendered = _compiled(template).render(**dict(inputs))
    except Exception as error:  # a template error, or Python's (a TypeError, the sandbox's SecurityError, ...)
        line = getattr(error, "lineno", None)
        where_line = f" on its line {line}" if line else ""
        raise PromptFileError(f"{where}: Jinja2 template error{where_line}: {error}".splitlines()[0]) from error
    return rendered, list(dict.fromkeys(kept + _KEPT.names))


def decode_prompt(data: bytes, *, source: str, max_bytes: int) -> str:
    """Bytes of a prompt file as text, or a one-line :class:`PromptFileError` saying what is wrong."""
    if len(data) > max_bytes:
        raise PromptFileError(
            f"{source}: {format_size(len(data))} is larger than the {format_size(max_bytes, limit=True)} limit "
            "for a prompt "
            "(raise max_prompt_bytes in [tool.spade] if this really is a prompt)"
        )
    if b"\x00" in data[:8192]:
        raise PromptFileError(f"{source}: looks like a binary file (NUL bytes), not a prompt")
    return decode_text(data, source, error=PromptFileError, encoding="utf-8-sig")


def read_prompt_file(path: Path, *, max_bytes: int) -> str:
    """Read and validate a prompt file: a regular file of at most ``max_bytes`` (never more is read)."""
    data = read_limited(
        path,
        limit=max_bytes,
        what="a prompt",
        hint="raise max_prompt_bytes in [tool.spade] if this really is a prompt",
        error=PromptFileError,
    )
    return decode_prompt(data, source=str(path), max_bytes=max_bytes)
