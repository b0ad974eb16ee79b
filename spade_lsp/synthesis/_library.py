"""The typed library of checks: each family's code, description and spec, written once.

The offline synthesizer parses a sentence into a family and its parameters; the LLM synthesizer lets a model
pick the family and its parameters (structured output) and checks them against the sentence. Either way the
code comes from here, so a word limit or a quoted phrase reads the same whoever chose it, and selection can
reason about its spec (``check``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from spade_lsp._prompts import PLACEHOLDER_PATTERN
from spade_lsp.checks import FORM_SLOT
from spade_lsp.taxonomy import COUNT, DATA_PLACEHOLDERS, EXCLUSION, INCLUSION, PRESENTATION_FORMAT


@dataclass(frozen=True, slots=True)
class Draft:
    slug: str
    category: str
    description: str
    expression: str
    check: dict[str, Any] | None = None
    asks_llm: bool = False


def slug(text: str, limit: int = 48) -> str:
    slug = re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")
    if len(slug) > limit:
        slug = slug[:limit].rsplit("_", 1)[0]
    return slug or "check"


def literal(value: Any) -> str:
    """A Python literal for generated code (repr is deterministic for str, int, list and dict)."""
    return repr(value)


def _bound_code(bound: int | str) -> str:
    if isinstance(bound, int):
        return str(bound)
    return f"checks.bound(example, {literal(bound.strip('{}'))})"


_SINGULAR: Final = {
    "words": "word", "sentences": "sentence", "characters": "character", "bullets": "bullet",
    "numbered_items": "numbered item", "list_items": "list item", "paragraphs": "paragraph", "lines": "line",
    "headings": "heading", "hashtags": "hashtag", "emojis": "emoji", "code_blocks": "code block", "links": "link",
    "bold": "bold span", "tweets": "tweet",
}  # fmt: skip
#: The names of the punctuation marks a phrase check can ban, for its name ("excludes_exclamation_marks").
MARK_NAMES: Final = {
    "!": "exclamation marks", ";": "semicolons", "—": "em dashes", "...": "ellipses", "…": "ellipses",
    ",": "commas", "/": "slashes", "'": "apostrophes", "’": "apostrophes", '"': "quotation marks",
    "“": "quotation marks", "”": "quotation marks", "&": "ampersands",
}  # fmt: skip
#: What a "per X" or "each X" instruction counts in: the kind of :func:`spade_lsp.checks.parts`.
PART_KINDS: Final = {
    "tweet": "items", "tweets": "items", "post": "items", "posts": "items", "item": "items", "items": "items",
    "point": "items", "points": "items", "bullet": "items", "bullets": "items", "bullet point": "items",
    "step": "items", "steps": "items", "tip": "items", "tips": "items", "idea": "items", "question": "items",
    "answer": "items", "option": "items", "slide": "items", "message": "items", "entry": "items",
    "section": "paragraphs", "paragraph": "paragraphs", "paragraphs": "paragraphs",
    "sentence": "sentences", "sentences": "sentences", "line": "lines", "lines": "lines",
}  # fmt: skip


#: Units whose name in a sentence is not their identifier with spaces.
UNIT_NAMES: Final = {
    "am_pm_times": "am/pm times",
    "first_person": "first-person pronouns",
    "prices": "amounts of money",
    "doses": "drug doses",
}


def _amount(bound: int | str, unit: str) -> str:
    """``3 bullets``, ``1 bullet``, ```word_count` words (each example's input)``."""
    if isinstance(bound, int):
        return f"{bound} {_SINGULAR.get(unit, unit) if bound == 1 else unit.replace('_', ' ')}"
    return f"`{bound.strip('{}')}` {unit.replace('_', ' ')} (each example's input)"


def count_draft(
    unit: str,
    low: int | str | None,
    high: int | str | None,
    scope: str | None,
    per: tuple[str, str] | None = None,
) -> Draft:
    """A count of ``unit`` in the response, in one section of it (``scope``), or in each of its parts
    (``per``: the word the prompt used, "tweet", and the kind of part it means)."""
    # a part the response lacks holds none: it fails a floor ("Summary: 2-4 sentences" with no summary)
    target = "response" if scope is None else f"checks.section(response, {literal(scope)})"
    measure = f"checks.count({target}, {literal(unit)})"
    where = (
        ""
        if scope is None or (per is not None and per[0] in (scope, scope.removesuffix("s")))  # "per clue": the key's
        else f" in {scope}"
        if re.fullmatch(r"(?:line|row) \d+", scope)
        else f" in the {scope} section"
    )
    if per is not None:  # the extreme part decides: the longest for a ceiling, the shortest for a floor
        counts = f"checks.part_counts({target}, {literal(unit)}, {literal(per[1])})"
        where += f" per {_SINGULAR.get(per[0], per[0]).rstrip('s') if per[0].endswith('s') else per[0]}"
        high_measure, low_measure = f"max({counts}, default=0)", f"min({counts}, default=0)"
    else:
        high_measure = low_measure = measure
    if low is not None and high is not None and low == high:
        expression = f"{measure} == {_bound_code(low)}"
        if per is not None:
            expression = f"all(n == {_bound_code(low)} for n in {counts})"
        description = f"Exactly {_amount(low, unit)}{where}."
    elif low is not None and high is not None:
        expression = f"{_bound_code(low)} <= {low_measure} and {high_measure} <= {_bound_code(high)}"
        if per is None:
            expression = f"{_bound_code(low)} <= {measure} <= {_bound_code(high)}"
        description = f"Between {_amount(low, unit).split(' ', 1)[0]} and {_amount(high, unit)}{where}."
    elif high == 0:  # "no hashtags": "at most 0 hashtags" says the same less plainly
        expression, description = f"{high_measure} <= 0", f"No {UNIT_NAMES.get(unit, unit.replace('_', ' '))}{where}."
    elif high is not None:
        expression, description = f"{high_measure} <= {_bound_code(high)}", f"At most {_amount(high, unit)}{where}."
    else:
        assert low is not None
        expression, description = f"{low_measure} >= {_bound_code(low)}", f"At least {_amount(low, unit)}{where}."
    check: dict[str, Any] = {"family": "count", "unit": unit, "min": low, "max": high}
    if scope is not None:
        check["section"] = scope
    if per is not None:
        check["per"] = per[1]
    name = slug(description.split(" (each")[0].replace("`", ""))
    banned = high == 0 and low is None  # "no hashtags", "never quote a price": content left out, not a size
    return Draft(name, EXCLUSION if banned else COUNT, description, expression, check)


def heading_draft(title: str, category: str) -> Draft:
    title = re.sub(r"\s+", " ", title.strip(" :*#")).strip()
    return Draft(
        f"has_{title}_section",
        category,
        f"Has a section titled “{title}”.",
        f"checks.has_heading(response, {literal(title)})",
        {"family": "headings", "headings": [title]},
    )


def phrase_code(phrase: str) -> str:
    """The phrase as generated code: a literal, or filled from the example when it holds placeholders."""
    if PLACEHOLDER_PATTERN.search(phrase):  # "Start with 'Hi {first_name},'"
        return f"checks.fill({literal(phrase)}, example)"
    return literal(phrase)


def ungrouped_numbers_draft() -> Draft:
    """No number is written with thousands separators ("Amounts are plain numbers: no commas")."""
    return Draft(
        "numbers_without_thousands_separators",
        PRESENTATION_FORMAT,
        "Writes no number with thousands separators (1549800, not 1,549,800).",
        "not checks.numbers_grouped(response)",
        {"family": "numbers_grouped", "present": False},
    )


def phrases_draft(phrases: list[str], *, exclude: bool, any_of: bool = False) -> Draft:
    """The response holds every phrase (``any_of``: one of them at least; ``exclude``: none of them), whole
    words, any inflection."""
    verb = "excludes" if exclude else "includes"
    listed = "[" + ", ".join(map(phrase_code, phrases)) + "]"  # a placeholder in a phrase is filled per example
    if len(phrases) == 1:
        expression = f"{'not ' if exclude else ''}checks.contains_phrase(response, {phrase_code(phrases[0])})"
    elif exclude:
        expression = f"not checks.contains_any(response, {listed})"
    elif any_of:
        expression = f"checks.contains_any(response, {listed})"
    else:
        expression = f"all(checks.contains_phrase(response, p) for p in {listed})"
    quoted = ", ".join(f"“{p}”" for p in phrases)
    inflected = " (any inflection)" if any(ch.isalpha() for ch in "".join(phrases)) else ""
    contains = "Contains one of" if any_of and len(phrases) > 1 else "Contains"
    description = f"Uses none of: {quoted}{inflected}." if exclude else f"{contains} {quoted}{inflected}."
    named = dict.fromkeys(MARK_NAMES.get(phrase, phrase) for phrase in phrases)
    return Draft(
        f"{verb}_{'_'.join(named)}",
        EXCLUSION if exclude else INCLUSION,
        description,
        expression,
        {"family": verb, "phrases": [p.lower() for p in phrases], **({"any": True} if any_of and not exclude else {})},
    )


def offers_none_draft(terms: Sequence[str]) -> Draft:
    """The response offers or promises none of ``terms`` ("Never promise refunds, bill credits or compensation"):
    naming one to say it cannot be offered is no offer (see ``checks.offers``)."""
    quoted = ", ".join(f"“{term}”" for term in terms)
    return Draft(
        f"offers_no_{'_'.join(terms)}",
        EXCLUSION,
        f"Offers or promises none of: {quoted} (any inflection); saying one cannot be offered is allowed.",
        f"not checks.offers(response, {literal(list(terms))})",
        {"family": "offers_none", "terms": [term.lower() for term in terms]},
    )


def citation_drafts(example: str, *, each_sentence: bool) -> list[Draft]:
    """Citations in the form of ``example`` ("Cite the passage number in square brackets, like [2]"): at least one,
    and, where every claim or sentence is to carry one, one in every sentence."""
    drafts = [
        Draft(
            f"cites_like_{slug(example)}",
            INCLUSION,
            f"Cites its sources in the form {example}.",
            f"checks.has_form_of(response, {literal(example)})",
            {"family": "cites", "example": example},
        )
    ]
    if each_sentence:
        drafts.append(
            Draft(
                f"cites_each_sentence_like_{slug(example)}",
                INCLUSION,
                f"Every sentence of four words or more carries a citation in the form {example}.",
                f"checks.cites_each_sentence(response, {literal(example)})",
                {"family": "cites_each_sentence", "example": example},
            )
        )
    return drafts


def form_ban_draft(examples: Sequence[str]) -> Draft:
    """The response writes nothing in the form of the ban's examples ("Jira keys (like PLAT-123)": no key at all,
    "@mention": no @handle); the example itself is one of many such tokens, not the one banned."""
    spelled = [example.replace("@", "at ").replace("#", "hash ") for example in examples]
    calls = [f"checks.has_form_of(response, {literal(example)})" for example in examples]
    return Draft(
        f"writes_nothing_like_{'_or_'.join(map(slug, spelled))}",
        EXCLUSION,
        f"Writes nothing in the form of {' or '.join(f'“{example}”' for example in examples)}.",
        f"not {calls[0]}" if len(calls) == 1 else f"not ({' or '.join(calls)})",
        {"family": "no_form", "examples": list(examples)},
    )


def ids_kept_draft(fields: Sequence[str]) -> Draft:
    """Every identifier the named inputs list is in the response, whole: "List every affected batch code"."""
    return Draft(
        f"keeps_every_id_of_{'_'.join(fields)}",
        INCLUSION,
        f"Every identifier {' and '.join(f'the input `{field}`' for field in fields)} gives appears in it, whole.",
        f"checks.ids_kept(response, example, {literal(list(fields))})",
        {"family": "ids_kept", "fields": list(fields)},
    )


def greets_by_name_draft(field: str, *, first_name: bool) -> Draft:
    """The response's opening holds the input's name (its first word where the sentence says first name)."""
    which = "first name" if first_name else "name"
    flag = ", first_name=True" if first_name else ""
    return Draft(
        f"greets_by_{field}" + ("_first_name" if first_name else ""),
        INCLUSION,
        f"Its opening addresses the reader by the {which} the input `{field}` gives.",
        f"checks.greets_by_name(response, checks.value(example, {literal(field)}){flag})",
        {"family": "greets_by_name", "field": field, "first_name": first_name},
    )


def labelled_when_mentioned_draft(keywords: Sequence[str], label: str, fields: Sequence[str]) -> Draft:
    """The response gives ``label`` where the inputs mention one of ``keywords``; other examples: no verdict."""
    return Draft(
        f"labels_{slug(label)}_when_mentioned",
        INCLUSION,
        f"Gives “{label}” when the inputs mention {', '.join(f'“{k}”' for k in keywords)}.",
        f"checks.labelled_when_mentioned(response, example, {literal(list(keywords))}, {literal(label)}"
        + (f", fields={literal(list(fields))})" if fields else ")"),
        {"family": "labelled_when_mentioned", "keywords": list(keywords), "label": label, "fields": list(fields)},
    )


def refused_when_mentioned_draft(keywords: Sequence[str], label: str) -> Draft:
    """The response does not give ``label`` where the inputs mention one of ``keywords`` ("Damp and mould are never
    routine"); other examples: no verdict."""
    return Draft(
        f"never_{slug(label)}_when_mentioned",
        EXCLUSION,
        f"Does not give “{label}” when the inputs mention {', '.join(f'“{k}”' for k in keywords)}.",
        f"not checks.labelled_when_mentioned(response, example, {literal(list(keywords))}, {literal(label)})",
        {"family": "refused_when_mentioned", "keywords": list(keywords), "label": label},
    )


def gives_draft(literals: Sequence[str]) -> Draft:
    """The response passes on each of ``literals``, contact details the prompt gives (``checks.gives``)."""
    return Draft(
        f"gives_{slug(literals[0])}",
        INCLUSION,
        f"Gives {', '.join(f'“{given}”' for given in literals)}.",
        f"checks.gives(response, {literal(list(literals))})",
        {"family": "gives", "literals": list(literals)},
    )


def gives_when_mentioned_draft(topics: Sequence[str], literals: Sequence[str], fields: Sequence[str]) -> Draft:
    """The response gives ``literals`` (a number to call, a line to copy) where the inputs mention one of
    ``topics``; other examples: no verdict."""
    return Draft(
        f"gives_{slug(literals[0])}_when_mentioned",
        INCLUSION,
        f"Gives {' and '.join(f'“{x}”' for x in literals)} when the inputs mention "
        f"{', '.join(f'“{t}”' for t in topics)}.",
        f"checks.gives_when_mentioned(response, example, {literal(list(topics))}, {literal(list(literals))}"
        + (f", fields={literal(list(fields))})" if fields else ")"),
        {"family": "gives_when_mentioned", "topics": list(topics), "literals": list(literals), "fields": list(fields)},
    )


def names_no_set_time_draft() -> Draft:
    """The response sets no time or day the inputs do not give: "Never promise a specific visit date or time"."""
    return Draft(
        "names_no_set_time",
        EXCLUSION,
        "Sets no time or day of its own: no clock time, weekday, date or “tomorrow” that the inputs do not give.",
        "checks.names_no_set_time(response, example)",
        {"family": "names_no_set_time"},
    )


def uses_pronouns_draft(field: str) -> Draft:
    """The response refers to its subject by the pronouns the input ``field`` gives ("using the pronouns given")."""
    return Draft(
        f"uses_the_{field}",
        INCLUSION,
        f"Refers to its subject by the pronouns `{field}` gives (no “he” or “she” that set lacks).",
        f"checks.uses_pronouns(response, checks.value(example, {literal(field)}))",
        {"family": "uses_pronouns", "field": field},
    )


def quotes_no_one_draft() -> Draft:
    """The response quotes no one: "Don't quote anyone directly; paraphrase instead", "never quote the panel"."""
    return Draft(
        "quotes_no_one",
        EXCLUSION,
        "Quotes no one: no quotation of three words or more.",
        "checks.quotes_no_one(response)",
        {"family": "quotes_no_one"},
    )


def names_no_company_draft() -> Draft:
    """The response names no company: "never name any company", "never name a contractor", "no company names"."""
    return Draft(
        "names_no_company",
        EXCLUSION,
        "Names no company: no name with a legal form (“Ltd”, “Inc”), and none of the companies the inputs name.",
        "checks.names_no_company(response, example)",
        {"family": "names_no_company"},
    )


def names_no_one_draft(allowed: Sequence[str] = ()) -> Draft:
    """The response names none of the people the inputs name; the inputs ``allowed`` (a signer, staff the prompt
    writes in) may be named."""
    but = f" (the names in {', '.join(f'`{field}`' for field in allowed)} may be)" if allowed else ""
    return Draft(
        "names_no_one",
        EXCLUSION,
        f"Names none of the people the inputs name{but}: no name or word of one that the notes give for a person.",
        f"checks.names_no_one(response, example, allowed={literal(list(allowed))})",
        {"family": "names_no_one", "allowed": list(allowed)},
    )


def repeats_no_contact_draft() -> Draft:
    """The response repeats none of the phone numbers and e-mail addresses the inputs hold ("Never include the
    resident's phone number or email address")."""
    return Draft(
        "repeats_no_contact",
        EXCLUSION,
        "Repeats none of the phone numbers or e-mail addresses the inputs give.",
        "checks.repeats_no_contact(response, example)",
        {"family": "repeats_no_contact"},
    )


def keeps_private_draft(fields: Sequence[str] = (), markers: Sequence[str] = ()) -> Draft:
    """The response repeats nothing only the private inputs (``fields``) or the inputs' marked lines (``markers``)
    say: an input given "for context only", lines "marked CONFIDENTIAL"."""
    what = [f"the input `{field}`" for field in fields] + [f"lines marked “{marker}”" for marker in markers]
    return Draft(
        f"keeps_private_{'_'.join([*fields, *markers])}",
        EXCLUSION,
        f"Repeats nothing only {' or '.join(what)} say (no figure, no four words in a row).",
        f"checks.keeps_private(response, example, fields={literal(list(fields))}, markers={literal(list(markers))})",
        {"family": "keeps_private", "fields": list(fields), "markers": list(markers)},
    )


def mentions_draft(field: str, *, exclude: bool = False) -> Draft:
    """The response refers to an input's value (``exclude``: does not repeat it)."""
    value = f"checks.value(example, {literal(field)})"
    if exclude:
        return Draft(
            f"does_not_mention_{field}",
            EXCLUSION,
            f"Does not repeat the input `{field}`.",
            f"not checks.mentions(response, {value})",
            {"family": "not_mentions", "field": field},
        )
    return Draft(
        f"mentions_{field}",
        DATA_PLACEHOLDERS,
        f"Refers to the input `{field}` (its value, or most of its key words).",
        f"checks.mentions(response, {value})",
        {"family": "mentions", "field": field},
    )


def gives_away_draft(field: str, letters: int) -> Draft:
    """The response gives away no part of an input's value: no word of ``letters`` or more letters that is part of
    it or shares its root (``checks.gives_away``)."""
    return Draft(
        f"gives_away_no_part_of_{field}",
        EXCLUSION,
        f"Gives away no part of the input `{field}` ({letters} letters or more) and no word from its root.",
        f"not checks.gives_away(response, checks.value(example, {literal(field)}), {letters})",
        {"family": "gives_away", "field": field, "letters": letters},
    )


def gives_away_within_draft(key: str, secret_key: str, letters: int) -> Draft:
    """No object of the JSON response gives away its own ``secret_key`` in its ``key``
    (``checks.gives_away_within``)."""
    return Draft(
        f"{key}_gives_away_no_part_of_its_{secret_key}",
        EXCLUSION,
        f"No “{key}” gives away part of its own “{secret_key}” ({letters} letters or more) or a word from its root.",
        f"not checks.gives_away_within(response, {literal(key)}, {literal(secret_key)}, {letters})",
        {"family": "gives_away_within", "key": key, "secret_key": secret_key, "letters": letters},
    )


def language_draft(*, code: str | None = None, name: str | None = None, field: str | None = None) -> Draft:
    """Written in a language: a fixed one (``code``, shown as ``name``) or the one an input names (``field``)."""
    if field is not None:
        return Draft(
            f"in_the_language_{field}",
            PRESENTATION_FORMAT,
            f"Written in the language the input `{field}` names (langdetect).",
            f"checks.in_language(response, checks.value(example, {literal(field)}))",
            {"family": "language", "field": field},
        )
    assert code is not None
    shown = name or code
    return Draft(
        f"in_{slug(shown)}",
        PRESENTATION_FORMAT,
        f"Written in {shown.title()} (langdetect).",
        f"checks.in_language(response, {literal(code)})",
        {"family": "language", "code": code},
    )


def same_language_draft(field: str) -> Draft:
    """Written in the language the input is written in ("reply in the language of the user's message")."""
    return Draft(
        f"in_the_language_of_{field}",
        PRESENTATION_FORMAT,
        f"Written in the language the input `{field}` is written in (langdetect).",
        f"checks.in_language_of(response, checks.value(example, {literal(field)}))",
        {"family": "language", "same_as": field},
    )


def tag_draft(tag: str) -> Draft:
    """The response holds an ``<tag> ... </tag>`` element."""
    return Draft(
        f"in_{tag}_tags",
        PRESENTATION_FORMAT,
        f"Has an <{tag}> ... </{tag}> element.",
        f"checks.has_tag(response, {literal(tag)})",
        {"family": "tag", "tag": tag},
    )


def letter_case_draft(case: str) -> Draft:
    """The response's letters are all ``case`` ("lower" or "upper")."""
    return Draft(
        f"all_{case}case",
        PRESENTATION_FORMAT,
        f"Written in {case}case (code, links and tags aside).",
        f"checks.letter_case(response) == {literal(case)}",
        {"family": "letter_case", "case": case},
    )


def json_draft(keys: list[str], *, object_only: bool = False, only: bool = False) -> Draft:
    """The response is JSON: an object with these keys when any are given (and no other key where the sentence
    says "exactly these keys" or "no extra keys"), an object where the sentence says "JSON object"; otherwise an
    object or an array ("answer in JSON" says no more, and another sentence may ask for the array)."""
    expression = "isinstance(checks.json_value(response), (dict, list))"
    description = "The response is JSON (an object or an array)."
    if object_only:
        expression, description = "isinstance(checks.json_value(response), dict)", "The response is a JSON object."
    if keys and only:
        expression = f"checks.json_has_keys(response, {literal(keys)}, only=True)"
        description = f"The response is a JSON object with keys {', '.join(keys)} and no other."
    elif keys:
        expression = f"checks.json_has_keys(response, {literal(keys)})"
        description = f"The response is a JSON object with keys {', '.join(keys)}."
    return Draft(
        "json_with_keys_" + "_".join(keys) if keys else "valid_json",
        PRESENTATION_FORMAT,
        description,
        expression,
        {"family": "json", "keys": keys},
    )


def keys_within_draft(keys: list[str]) -> Draft:
    """The JSON object holds no key beyond ``keys`` (the prompt's template's, at any depth)."""
    return Draft(
        "no_extra_json_keys",
        PRESENTATION_FORMAT,
        f"The JSON object holds no key beyond the template's: {', '.join(keys)}.",
        f"checks.json_keys_within(response, {literal(keys)})",
        {"family": "json_keys_within", "keys": keys},
    )


def value_set_draft(key: str, values: list[str]) -> Draft:
    """The JSON object's ``key`` holds one of ``values`` (any case), or a list of them only."""
    return Draft(
        f"{key}_is_one_of_" + "_".join(values),
        PRESENTATION_FORMAT,
        f"The JSON key {key} holds one of: {', '.join(values)}.",
        f"checks.json_value_in(response, {literal(key)}, {literal(values)})",
        {"family": "value_set", "key": key, "values": values},
    )


def nested_value_set_draft(key: str, values: list[str]) -> Draft:
    """Every value of the JSON key ``key``, wherever it appears (each object of a list), is one of ``values``."""
    return Draft(
        f"every_{key}_is_one_of_" + "_".join(values[:6]),
        PRESENTATION_FORMAT,
        f"Every value of the JSON key {key} is one of: {', '.join(values)}.",
        f"checks.json_values_in(response, {literal(key)}, {literal(values)})",
        {"family": "value_set", "key": key, "values": values, "nested": True},
    )


def date_form_draft(form: str, key: str = "") -> Draft:
    """Dates written in ``form``: those of the JSON key (or labelled line) ``key``, or every date the response
    writes."""
    where = f"The {key} value is a date" if key else "Every date it writes is"
    return Draft(
        f"{key + '_' if key else ''}dates_as_{_slug_form(form)}",
        PRESENTATION_FORMAT,
        f"{where} in the form {form} (null or empty aside).",
        f"checks.dates_in_form(response, {literal(form)}{', ' + literal(key) if key else ''})",
        {"family": "date_form", "form": form, **({"key": key} if key else {})},
    )


def _slug_form(form: str) -> str:
    return re.sub(r"[^A-Za-z]+", "_", form).lower()


def number_range_draft(key: str, low: float | None, high: float | None) -> Draft:
    """The JSON key ``key`` holds numbers within the bounds its schema line gives (none: numbers of any size)."""

    if low is not None and high is not None:
        said = f"from {low:g} to {high:g}"
    elif high is not None or low is not None:
        said = f"at most {high:g}" if high is not None else f"at least {low:g}"
    else:  # '"amount" must be a number, not a string': numbers, unbounded
        said = "of any size"
    return Draft(
        f"{key}_{said.replace(' ', '_')}",
        PRESENTATION_FORMAT,
        f"The JSON key {key} holds numbers {said}.",
        f"checks.json_numbers_within(response, {literal(key)}, {literal(low)}, {literal(high)})",
        {"family": "number_range", "key": key, "low": low, "high": high},
    )


def verbatim_draft(key: str, field: str) -> Draft:
    """The JSON object's ``key`` holds a passage copied word for word from the input ``field``."""
    return Draft(
        f"{key}_copied_from_{field}",
        DATA_PLACEHOLDERS,
        f"The JSON key {key} is copied word for word from the input `{field}`.",
        f"checks.verbatim(checks.section(response, {literal(key)}), checks.value(example, {literal(field)}))",
        {"family": "verbatim", "key": key, "field": field},
    )


def line_opening_draft(line: str, prefix: str) -> Draft:
    """The response's ``line`` ("line 2") opens with ``prefix``: a fixed layout's label ("Reason:")."""
    return Draft(
        f"{line}_starts_with_{prefix}",
        PRESENTATION_FORMAT,
        f"Its {line} starts with “{prefix}”.",
        f"checks.starts_with(checks.section(response, {literal(line)}), {phrase_code(prefix)})",
        {"family": "line_starts_with", "line": line, "phrase": prefix},
    )


def numbered_as_draft(part: str, marker: str) -> Draft:
    """Every piece of the response (each ``part``: "tweet") opens with its number written as ``marker`` shows."""
    return Draft(
        f"each_{part}_numbered_like_{marker}",
        PRESENTATION_FORMAT,
        f"Each {part} opens with its number written like “{marker}”.",
        f"checks.numbered_as(response, {literal(marker)})",
        {"family": "numbered_as", "part": part, "marker": marker},
    )


def only_in_last_part_draft(unit: str, part: tuple[str, str]) -> Draft:
    """No ``unit`` before the response's last ``part`` ("Put hashtags only in the last tweet"): the last one may
    hold them, and need not."""
    word, kind = part
    return Draft(
        f"{unit}_only_in_the_last_{word}",
        PRESENTATION_FORMAT,
        f"{unit.replace('_', ' ').capitalize()} only in the last {word}: none in the ones before it.",
        f"not any(checks.part_counts(response, {literal(unit)}, {literal(kind)})[:-1])",
        {"family": "only_in_last_part", "unit": unit, "part": word},
    )


def no_greeting_draft() -> Draft:
    """The response opens without greeting its reader."""
    return Draft(
        "no_greeting",
        PRESENTATION_FORMAT,
        "Does not open with a greeting.",
        "not checks.has_greeting(response)",
        {"family": "no_greeting"},
    )


def no_sign_off_draft() -> Draft:
    """The response ends without a sign-off."""
    return Draft(
        "no_sign_off",
        PRESENTATION_FORMAT,
        "Does not end with a sign-off.",
        "not checks.has_sign_off(response)",
        {"family": "no_sign_off"},
    )


def line_start_draft(prefix: str) -> Draft:
    """Some line of the response opens with ``prefix``: a line a layout asks for anywhere ("A line starting
    "Verdict:" saying ...")."""
    return Draft(
        f"has_line_starting_with_{prefix}",
        PRESENTATION_FORMAT,
        f"A line starts with “{prefix}”.",
        f"checks.has_line_starting(response, {phrase_code(prefix)})",
        {"family": "has_line_starting", "phrase": prefix},
    )


def line_value_draft(line: str, values: list[str]) -> Draft:
    """The response's ``line`` ("line 1") is one of ``values`` (any case, surrounding space aside)."""
    return Draft(
        f"{line}_is_one_of_" + "_".join(values),
        PRESENTATION_FORMAT,
        f"Its {line} is one of: {', '.join(values)}.",
        f"checks.section(response, {literal(line)}).strip().lower() in {literal([value.lower() for value in values])}",
        {"family": "line_value", "line": line, "values": values},
    )


def labelled_value_draft(label: str, values: list[str]) -> Draft:
    """A line labelled ``label`` opens its value with one of ``values``: a layout's "DECISION: <APPROVE|REFER>"."""
    return Draft(
        f"{slug(label)}_is_one_of_" + "_".join(map(slug, values)),
        PRESENTATION_FORMAT,
        f"Its “{label}:” line gives one of: {', '.join(values)}.",
        f"checks.labelled_value_in(response, {literal(label)}, {literal(values)})",
        {"family": "labelled_value", "label": label, "values": values},
    )


def copied_input_draft(field: str) -> Draft:
    """The input ``field``'s whole value appears in the response word for word ("put the compensation statement in
    its own paragraph, word for word as given")."""
    return Draft(
        f"copies_{field}_word_for_word",
        DATA_PLACEHOLDERS,
        f"Holds the input `{field}` word for word.",
        f"checks.verbatim(checks.value(example, {literal(field)}), response)",
        {"family": "copied_input", "field": field},
    )


def quotes_draft(field: str) -> Draft:
    """The response quotes the input ``field`` word for word ("quote one sentence of the statement verbatim")."""
    return Draft(
        f"quotes_{field}_word_for_word",
        DATA_PLACEHOLDERS,
        f"Quotes the input `{field}` word for word, in quotation marks.",
        f"checks.quotes_from(response, checks.value(example, {literal(field)}))",
        {"family": "quotes_from", "field": field},
    )


def label_draft(labels: list[str], *, bare: bool = False) -> Draft:
    """The whole answer is one of ``labels`` (any case; emphasis, quotes and a closing full stop aside unless
    ``bare``: a rule that also refuses punctuation)."""
    option = ", bare=True" if bare else ""
    return Draft(
        "answer_is_one_label",
        PRESENTATION_FORMAT,
        f"The answer is one of the labels: {', '.join(labels)}.",
        f"checks.answer_is_one_of(response, {literal(labels)}{option})",
        {"family": "label", "labels": labels},
    )


def markdown_refused(text: str) -> bool:
    """Whether a sentence that speaks of markdown asks for none ("no markdown", "don't use markdown", "with no
    lists, symbols, emojis, URLs or markdown"), unless a word between asks for it after all ("never ..., always
    use markdown")."""
    return (
        re.search(
            r"\b(?:no|not|without|avoid|don't|never)\b(?:(?!\b(?:always|must|should|but|instead)\b)[^.;:]){0,60}"
            r"markdown",
            text,
            re.IGNORECASE,
        )
        is not None
    )


def markdown_draft(*, present: bool) -> Draft:
    return Draft(
        "markdown" if present else "no_markdown",
        PRESENTATION_FORMAT,
        "Uses markdown structure." if present else "Plain text without markdown (hyphen or numbered lists aside).",
        "checks.is_markdown(response)" if present else "not checks.is_markdown(response, lists=False)",
        {"family": "markdown", "present": present},
    )


def edge_refused(sentence: str, *, end: bool) -> bool:
    """Whether the sentence forbids the opening (``end``: the ending) it names: "Never begin with 'Sure'",
    "Don't end with a question"."""
    verbs = r"end|finish|close|conclude" if end else r"start|begin|open"
    return (
        re.search(
            rf"\b(?:don't|do not|never|not|avoid|must not|mustn't|should not|shouldn't)\s+(?:\w+\s+){{0,2}}?"
            rf"(?:{verbs})(?:s|ing)?\b",
            sentence,
            re.IGNORECASE,
        )
        is not None
    )


def edge_draft(phrase: str, *, end: bool, refused: bool = False) -> Draft:
    """The response starts (``end``: ends) with the phrase; ``refused``: it does not."""
    where = "ends" if end else "starts"
    if refused:
        return Draft(
            f"does_not_{where[:-1]}_with_{phrase}",
            PRESENTATION_FORMAT,
            f"Does not {where[:-1]} with “{phrase}”.",
            f"not checks.{where}_with(response, {phrase_code(phrase)})",
            {"family": f"not_{where}_with", "phrase": phrase},
        )
    return Draft(
        f"{where}_with_{phrase}",
        PRESENTATION_FORMAT,
        f"{where.title()} with “{phrase}”.",
        f"checks.{where}_with(response, {phrase_code(phrase)})",
        {"family": f"{where}_with", "phrase": phrase},
    )


def line_form_draft(edge: str, form: str, *, numbers: str = "", values: str = "") -> Draft:
    """The ``edge`` ("first" or "last") line is ``form`` filled in ('The first line must be exactly "Score: N/10",
    where N is a whole number'; 'The last line must contain only Answer: and the number'); ``numbers``: the slots
    that take a whole number, ``values``: those that take any number (see ``checks.fills_form``)."""
    said = "".join(
        f", {' and '.join(slots.split())} {kind}"
        for slots, kind in ((numbers, "a whole number"), (values, "a number"))
        if slots
    )
    arguments = "".join(
        f", {name}={literal(slots)}" for name, slots in (("numbers", numbers), ("values", values)) if slots
    )
    filled = " filled in" if FORM_SLOT.search(form) else " (any case)"
    return Draft(
        f"{edge}_line_is_{form}",
        PRESENTATION_FORMAT,
        f"Its {edge} line is “{form}”{filled}{said}.",
        f"checks.fills_form(checks.{edge}_line(response), {literal(form)}{arguments})",
        {"family": f"{edge}_line_form", "form": form, "numbers": numbers, "values": values},
    )


def headings_in_order_draft(titles: Sequence[str]) -> Draft:
    """The sections come in the order the prompt lists them ("exactly these sections, in order: ...")."""
    return Draft(
        f"sections_in_order_{'_'.join(titles)}",
        PRESENTATION_FORMAT,
        f"Its sections come in this order: {', '.join(f'“{title}”' for title in titles)}.",
        f"checks.headings_in_order(response, {literal(list(titles))})",
        {"family": "headings_in_order", "titles": list(titles)},
    )


def first_and_last_draft(first: str, last: str) -> Draft:
    """The first line names one part and the last line another ("Include a warm-up first and a cool-down last"):
    hyphen or space between their words alike ("warm up", "warm-up")."""
    first_words, last_words = first.replace("-", " "), last.replace("-", " ")
    return Draft(
        f"{first}_first_and_{last}_last",
        PRESENTATION_FORMAT,
        f"Its first line names the {first} and its last line the {last}.",
        f"checks.contains_phrase(checks.first_line(response), {literal(first_words)})"
        f" and checks.contains_phrase(checks.last_line(response), {literal(last_words)})",
        {"family": "first_and_last", "first": first, "last": last},
    )


def last_line_draft(prefix: str) -> Draft:
    """The response's last line opens with ``prefix`` ("Label:", "Answer:"): the answer line a format asks for."""
    return Draft(
        f"last_line_starts_with_{prefix}",
        PRESENTATION_FORMAT,
        f"Its last line starts with “{prefix}”.",
        f"checks.starts_with(checks.last_line(response), {phrase_code(prefix)})",
        {"family": "last_line_starts_with", "phrase": prefix},
    )


def ends_with_question_draft(*, refused: bool = False) -> Draft:
    if refused:
        return Draft(
            "does_not_end_with_a_question",
            PRESENTATION_FORMAT,
            "Does not end with a question.",
            "not checks.ends_with_question(response)",
            {"family": "not_ends_with_question"},
        )
    return Draft(
        "ends_with_a_question",
        PRESENTATION_FORMAT,
        "The last sentence is a question (its final . ! or ? is a ?).",
        "checks.ends_with_question(response)",
        {"family": "ends_with_question"},
    )


#: "Don't add any text below the exercises list", "End with the list": nothing may follow the last list.
ENDS_WITH_LIST_CUE: Final = re.compile(
    r"\b(?:(?:don't|do not|never|no)\s+(?:\w+\s+){0,4}?(?:below|after|following|beneath)\s+(?:the\s+)?"
    r"(?:[\w-]+\s+){0,2}?list|end\s+with\s+(?:the\s+)?(?:[\w-]+\s+){0,2}?list)\b",
    re.IGNORECASE,
)
#: "Output only the list", "no intro or closing text, just the list", "with no introduction or closing remarks",
#: "no commentary before or after the list".
ONLY_LIST_CUE: Final = re.compile(
    r"\b(?:output|return|give|write|reply\s+with|respond\s+with)\s+only\s+the\s+(?:[\w-]+\s+)?(?:list|bullets|bullet\s+points"
    r"|items|checklist)\b|\bjust\s+the\s+(?:[\w-]+\s+)?(?:list|bullets|checklist)\b"
    r"|\b(?:no|without(?:\s+an?)?)\s+(?:intro(?:duction)?|preamble|opening)\s+(?:or|and|nor)\s+(?:closing|outro|conclusion|"
    r"closing\s+remarks?)\b"
    r"|\b(?:no|nothing|without)\s+(?:[\w-]+\s+){0,3}?before\s+or\s+after\s+(?:the|this|your)\s+(?:[\w-]+\s+)?list\b",
    re.IGNORECASE,
)
#: "Return only the SQL in a ```sql code block", "output just the code, in one code block", "nothing outside the
#: code block".
#: A line of prose asked for before anything else: "Start with a one-sentence overview", "Begin with a short
#: introduction" (not "Start with a heading", nor a quoted opening, which is its words).
OVERVIEW_FIRST_CUE: Final = re.compile(
    r"^\W*(?:\d+[.)]\s*)?(?:start|begin|open)\s+with\s+(?:a|an|one)\s+(?:(?:one|single|two|short|brief|1|2)"
    r"[- ](?:sentence|line)\s+|short\s+|brief\s+)*(?:overview|summary|introduction|intro|sentence|paragraph)\b",
    re.IGNORECASE,
)
#: Bold asked for in every item: "Bold each concept name", "every term name in bold".
BOLD_EACH_CUE: Final = re.compile(
    r"\bbold\s+(?:each|every|all)\s+(?:of\s+the\s+)?(?:[\w-]+\s+){0,2}?(?:names?|terms?|titles?|labels?|concepts?)\b"
    r"|\b(?:each|every)\s+(?:[\w-]+\s+){0,2}?(?:names?|terms?|concepts?|labels?)\s+(?:in|is\s+in|(?:should|must)\s+be"
    r"(?:\s+in)?)\s+bold\b",
    re.IGNORECASE,
)
#: Calculations asked to be right: "Double-check every calculation", "add it up carefully", "Show your working".
CALCULATION_CUE: Final = re.compile(
    r"\b(?:double[- ]check|check|verify|re-?check)\s+(?:every|each|all|your|the|any)\s+(?:of\s+(?:the|your)\s+)?"
    r"(?:\w+\s+)?(?:calculations?|arithmetic|maths?|sums?|totals?|computations?)\b"
    r"|\badd\s+(?:it|them|these|those|the\s+\w+)\s+up\s+carefully\b"
    r"|\b(?:calculations?|arithmetic|maths?|sums?|totals?)\s+(?:must|should)\s+be\s+(?:correct|right|accurate|exact)\b"
    r"|\bshow\s+(?:your|the|all)\s+(?:\w+\s+)?(?:working|workings|calculations?|arithmetic|maths?)\b",
    re.IGNORECASE,
)
ONLY_CODE_CUE: Final = re.compile(
    r"\b(?:output|return|give|write|reply\s+with|respond\s+with|answer\s+with)\s+(?:only|just)\b[^.;]{0,40}?"
    r"\b(?:in|as|inside|within)\s+(?:a\s+|one\s+|a\s+single\s+|single\s+)?(?:```\w*\s+|[\w-]+\s+)?"
    r"(?:code\s+block|fenced\s+block|code\s+fence)\b"
    r"|\b(?:output|return|give|reply\s+with|respond\s+with)\s+(?:only|just)\s+(?:a|the|one)\s+(?:single\s+)?"
    r"(?:[\w-]+\s+)?code\s+block\b"
    r"|\b(?:anything|nothing|no\s+(?:other\s+)?(?:text|prose|explanation|commentary))\s+(?:else\s+)?outside\s+"
    r"(?:of\s+)?the\s+(?:[\w-]+\s+)?code\s+(?:block|fence)\b",
    re.IGNORECASE,
)
#: "Output only the translated pattern, with no notes, comments or explanations", "Return only the commit message,
#: with no explanation before or after it", "no notes to the client". Not remarks inside the output ("No comments
#: on formatting" in a code review).
NO_REMARKS_CUE: Final = re.compile(
    r"\b(?:no|without|nor)\s+(?:any\s+)?(?:\w+\s+)?(?:notes?|comments?|commentary|explanations?|remarks?)\b"
    r"(?!\s+(?:on|about|in|inside|within|for\s+each|per)\b)",
    re.IGNORECASE,
)
#: "Don't write anything outside these four pairs of tags", "nothing outside the <answer> tags", "Output nothing
#: outside these two blocks" (of tags: a code block's is :data:`ONLY_CODE_CUE`).
ONLY_TAGS_CUE: Final = re.compile(
    r"\b(?:anything|nothing|no\s+(?:other\s+)?text)\s+(?:else\s+)?outside\s+(?:of\s+)?(?:the|these|those|its)\b[^.]{0,40}?"
    r"\b(?:tags?|(?<!code\s)blocks)\b",
    re.IGNORECASE,
)
#: "Encourage readers to contact your company", "invite them to get in touch", "include contact details".
CONTACT_CUE: Final = re.compile(
    r"\b(?:encourag\w*|invit\w*|ask|tell|remind|prompt|urg\w*)\s+(?:\w+\s+){0,3}?to\s+(?:\w+\s+){0,2}?"
    r"(?:contact|reach out|get in touch|call us|email us|write to us)\b"
    r"|\binclude\s+(?:[\w'’]+\s+){0,2}?contact\s+(?:details|info\w*)\b",
    re.IGNORECASE,
)
#: "Include a call to action", "encourage users to try out {topic}".
CALL_TO_ACTION_CUE: Final = re.compile(
    r"\bcall[- ]to[- ]action\b|\bCTA\b|\bencourag\w*\s+(?:\w+\s+){0,3}?to\s+(?:\w+\s+){0,3}?"
    r"(?:try|sign up|start|join|register|book|buy|visit|download|subscribe)\b",
    re.IGNORECASE,
)
#: "Refrain from speculating unless it is stated in the transcript", "Don't make up facts", "Only use the
#: information provided", "Answer based solely on the context": claims come from the source, not the model.
#: Not "Don't make up definitions" (a kind of content the source need not hold).
_FIGURES = (
    r"(?:facts?|figures?|numbers?|data|statistics?|stats|details?|information|things?|anything|values?|amounts?"
    r"|prices?|dates?|hours|times?|timescales?|quotes?|sources?|discounts?|offers?|deadlines?|percentages?|rates?"
    r"|fees?|costs?|deals?|answers?|stories)"
)
#: What the model is told not to invent, guess or make up: a figure or a fact ("don't guess other figures", "never
#: promise or guess a new delivery date", "do not invent benefits, PTO days or review dates"), or nothing named
#: ("never guess."); a few words may stand between the verb and the figure, within the clause.
_INVENTED = (
    r"(?:mak\w*\s+(?:\w+\s+)?up|invent\w*|fabricat\w*|hallucinat\w*|guess\w*|estimat\w*)"
    rf"(?:\s+(?:[\w-]+,?\s+){{0,10}}?{_FIGURES}\b|(?=\s*(?:[.,;:!)]|$)))"
)
_SOURCE = (
    r"(?:(?:\w+\s+){0,3}?(?:text|transcript|source|document|article|input|context|data|call|report|passage|note"
    r"|record|excerpt|clause|email|message)s?)"
)
SOURCED_CUE: Final = re.compile(
    r"\b(?:refrain\s+from|avoid|no|not|don't|do\s+not|never|without)\s+(?:\w+\s+){0,2}?speculat\w*"
    rf"|\b(?:don't|do\s+not|never|no|avoid|without)\s+(?:\w+\s+){{0,2}}?{_INVENTED}"
    r"|\bmak\w*\s+(?:anything|things|stuff|facts|numbers|figures|data)\s+up\b"
    r"|\b(?:only\s+(?:use|include|rely\s+on|draw\s+on|report|state|cite)|use\s+only)\s+(?:the\s+)?(?:facts?"
    r"|figures?|numbers?|data|information|details)\s+(?:\w+\s+)?(?:in|from|provided|given|stated|above|below)\b"
    r"|\buse\s+(?:the\s+)?(?:facts?|figures?|data|information|details)\s+(?:from|in)\s+[^.]{1,40}?\s+only\b"
    # "answer only with facts stated in the FAQ"
    r"|\b(?:answer|reply|respond)\s+only\s+with\s+(?:the\s+)?(?:facts?|information|details)\s+(?:\w+\s+)?(?:in|from|stated"
    r"|given|provided)\b"
    # "do not add tide times, prices or opening hours that the FAQ does not mention"
    r"|\b(?:add|invent|include|mention|introduce)\b[^.]{0,80}?\b(?:that|which)\s+(?:the\s+)?(?:[\w-]+\s+){0,2}?(?:does|do|did)"
    r"(?:n't|\s+not)\s+(?:mention|list|give|provide|include|state|contain)"
    # "use only what the technician said"
    r"|\b(?:use|include|report|state)\s+only\s+what\s+(?:the\s+)?(?:[\w-]+\s+){0,2}?(?:said|says|wrote|writes|gave|gives"
    r"|provided|provides|stated|states|mentioned|mentions)\b"
    rf"|\b(?:based|relying|rely|draw\w*)\s+(?:only|solely|strictly|exclusively)\s+on\s+(?:the\s+)?"
    rf"(?:(?:provided|given|following|above)\b|{_SOURCE})"
    rf"|\b(?:not|unless|only\s+if|only\s+when)\b[^.]{{0,40}}?\b(?:stated|mentioned|given|provided|present|found"
    rf"|contained|included)\s+in\s+(?:the|your)\s+{_SOURCE}"
    r"|\bstick\s+to\s+(?:the\s+)?(?:facts|source|text|transcript|data|information)\b"
    # "keep all dates and amounts unchanged": every figure the answer writes is one the input gave
    r"|\b(?:keep|preserve|leave|retain)\b[^.]{0,40}?\b(?:dates?|numbers?|amounts?|figures?"
    r"|prices?|times?)(?:\s*(?:,|and|or)\s*(?:all\s+)?(?:the\s+)?(?:dates?|numbers?|amounts?|figures?|prices?"
    r"|times?))*\s+(?:unchanged|intact|as\s+they\s+are|the\s+same|exactly\s+as)"
    # "keep every date, time, amount of money and phone number exactly as written": a list of figures, kept
    r"|\b(?:keep|preserve|leave|retain|copy)\b[^.]{0,30}?\b(?:dates?|numbers?|amounts?|figures?|prices?|times?)\b"
    r"[^.]{0,60}?\b(?:exactly\s+as\s+(?:written|given|stated)|as\s+written|unchanged|verbatim|word\s+for\s+word)"
    # "write the price exactly as given"
    r"|\b(?:write|keep|give|state|quote|use|copy)\s+(?:the\s+|every\s+|all\s+)?(?:[\w-]+\s+)?(?:prices?|amounts?|figures?"
    r"|numbers?|dates?|times?)\b[^.]{0,30}?\bexactly\s+as\s+(?:given|written|stated|provided)"
    # "do not add inclusions we did not mention"
    r"|\b(?:add|invent|include|mention|introduce)\b[^.]{0,60}?\b(?:that\s+)?(?:we|you|i|they)\s+(?:did|do)(?:n't|\s+not)\s+"
    r"(?:mention|list|give|provide|include|state)"
    # "never add medicines that are not in the note", "do not add facts that are not in the fact sheet": nothing
    # the source does not hold, whatever the prompt calls its source
    r"|\b(?:never|don't|do\s+not|must\s+not|should\s+not|without|no)\s+(?:\w+\s+){0,2}?(?:add|invent|introduce"
    r"|include)\b[^.]{0,60}?\b(?:that|which)\s+(?:are|is|were|was)(?:n't|\s+not)\s+(?:\w+\s+)?(?:in|from|on)\s+"
    r"(?:the|your)\s+[a-z]"
    # "No numbers that aren't in the abstract", "copy numbers exactly", "only what the abstract says"
    r"|\bno\s+(?:numbers?|figures?|statistics?|facts?|data|claims?|amounts?|dates?)\s+(?:that\s+|which\s+)?"
    r"(?:are(?:n't|\s+not)|is(?:n't|\s+not))\s+(?:in|from|on)\s+(?:the|your)\b"
    r"|\bcopy\s+(?:all\s+|the\s+|every\s+)?(?:numbers?|figures?|amounts?|values?)\s+(?:exactly|verbatim|as\s+written)"
    r"|^\W*only\s+what\s+(?:the\s+|your\s+)?(?:[\w-]+\s+){0,2}?(?:says|said|states|stated|gives|reports|contains)\b"
    # "every number, date, name and price must match the fact sheet exactly": the figures are the source's
    r"|\b(?:every|each|all(?:\s+the)?)\s+(?:numbers?|figures?|amounts?|prices?|dates?|statistics?)\b[^.]{0,60}?"
    r"\b(?:must|should|has\s+to|have\s+to|need\s+to)\s+(?:match|come\s+from|be\s+(?:taken\s+)?from|agree\s+with"
    r"|appear\s+in)\b"
    # "never change a medicine name, dose or schedule": the figures stay the source's
    r"|\b(?:never|don't|do\s+not|must\s+not|without)\s+(?:chang|alter|modif|round)\w*\b[^.]{0,40}?\b(?:doses?"
    r"|dosages?|numbers?|amounts?|figures?|prices?|dates?|quantit(?:y|ies))\b"
    # "use only values from the forecast data", "owner and deadline only from the log"
    rf"|\b(?:only\s+(?:use|include|report|state|cite)|use\s+only)\s+(?:the\s+)?(?:[\w-]+\s+)?{_FIGURES}\s+(?:in|from)\b"
    rf"|\bonly\s+from\s+(?:the|your)\s+{_SOURCE}"
    # "do not calculate, round or compare the figures", "don't convert hourly rates into annual figures", "don't do
    # sums": the response's figures are the source's, not the model's arithmetic
    r"|\b(?:never|don't|do\s+not|must\s+not)\s+(?:\w+,?\s+(?:or\s+)?){0,3}?(?:calculat|comput|convert|round"
    r"|recalculat|compar)\w*\b[^.]{0,40}?\b(?:figures?|numbers?|amounts?|rates?|prices?|values?|totals?)\b"
    r"|\b(?:never|don't|do\s+not)\s+do\s+(?:any\s+)?(?:sums|maths?|arithmetic)\b"
    # "never promise a new delivery date", "never give a specific date or time for a visit": none the source lacks
    r"|\b(?:never|don't|do\s+not|must\s+not)\s+(?:promise|give|quote|state|offer|suggest)\s+(?:or\s+\w+\s+)?(?:an?|any)"
    r"\s+(?:new|specific|exact|particular|firm)\s+(?:[\w-]+\s+)?(?:dates?|times?|figures?|amounts?|prices?|numbers?)\b"
    # "repeat the numbers from them exactly", "state ... both monthly payment figures exactly as given above", "flight
    # numbers, tails and times exactly as in the log"
    r"|\b(?:prices?|amounts?|figures?|numbers?|dates?|times?|readings?|values?|doses?)\b[^.]{0,60}?\bexactly\b"
    r"(?!\s+(?:once|twice|\d|one|two|three|four|five|six|seven|eight|nine|ten)\b)(?:\s+as\s+(?:given|written|stated|provided|printed|shown|listed|in\s+(?:the|your)\b))?"
    # "amounts, merchants or dates that aren't in the customer's message", "figures unless they're in the inputs"
    r"|\b(?:figures?|numbers?|amounts?|prices?|dates?|statistics?|timescales?)\b[^.]{0,60}?\b(?:that|which|unless)\s+"
    r"(?:they're|they\s+are|it's|it\s+is|aren't|are\s+not|isn't|is\s+not)\s+(?:\w+\s+)?(?:in|from|on)\s+(?:the|your)\b"
    # "pay figures must match the offer details exactly", "everything you say about access must come from the notes"
    r"|\b(?:figures?|numbers?|amounts?|prices?)\s+(?:must|should)\s+match\b"
    rf"|\b(?:everything|anything|all)\b[^.]{{0,60}}?\bmust\s+come\s+(?:only\s+)?from\s+(?:the|your)\s+{_SOURCE}"
    r"|\bthe\s+only\s+source\s+(?:for|of)\b"
    rf"|\bmade[\s-]up\s+{_FIGURES}\b",
    re.IGNORECASE,
)
#: What the response says when it invites the reader to get in touch, and when it asks the reader to act.
CONTACT_PHRASES: Final = (
    "contact", "reach out", "get in touch", "email us", "call us", "let us know", "write to us", "talk to us",
    "drop us a line", "reply to this email", "here to help",
)  # fmt: skip
CALL_TO_ACTION_PHRASES: Final = (
    "call to action", "click", "sign up", "get started", "try", "start", "join", "register", "book", "buy",
    "visit", "download", "subscribe", "learn more", "explore", "log in", "upgrade", "schedule", "claim",
)  # fmt: skip


def _refuses(sentence: str, words: str) -> bool:
    """Whether the sentence forbids what ``words`` (a regex) name: "don't include a call to action"."""
    return re.search(rf"\b(?:no|not|don't|never|avoid|without)\b[^.]{{0,25}}(?:{words})", sentence, re.I) is not None


def _asks_to_end_with_list(sentence: str) -> bool:
    """Nothing after the list; not where the sentence asks for nothing before it either (the list only)."""
    return ENDS_WITH_LIST_CUE.search(sentence) is not None and not _asks_for_only_a_list(sentence)


def _asks_for_only_a_list(sentence: str) -> bool:
    return ONLY_LIST_CUE.search(sentence) is not None


def _only_list_draft(sentence: str, inputs: tuple[str, ...]) -> Draft:
    return only_list_draft()


def only_list_draft(last_line: str = "") -> Draft:
    """The response is its list only; with ``last_line``, the final line the prompt asks for after it (a line
    starting with that label) is allowed."""
    if not last_line:
        return Draft(
            "only_the_list",
            PRESENTATION_FORMAT,
            "Is its list and nothing else: no introduction before the first item, no remark after the last.",
            "checks.only_list(response)",
            {"family": "only_list"},
        )
    return Draft(
        "only_the_list",
        PRESENTATION_FORMAT,
        f"Is its list and nothing else but the last line “{last_line}”: no introduction, no other remark.",
        f"checks.only_list(response, {phrase_code(last_line)})",
        {"family": "only_list", "last_line": last_line},
    )


#: "Return only the rewritten passage.", "Output just the SMS text": an instruction that opens by asking for the
#: output alone, whatever it is called (a ban on notes need not follow).
OUTPUT_ALONE_CUE: Final = re.compile(
    r"^\W*(?:\d+[.)]\s*)?(?:return|output|reply\s+with|respond\s+with|give|print|send|write)\s+(?:only|just|nothing\s+but)"
    r"\s+(?:the|your)\b",
    re.IGNORECASE,
)

#: Notes about the output refused outright: "Do not add notes or explanations", "No code fences, no commentary",
#: "do not add any explanation" (not "gives no real explanation", nor "No notes.", which may be a section of the
#: output, nor comments, which code has).
NO_NOTES_ADDED_CUE: Final = re.compile(
    r"(?:\b(?:do\s+not|don't|never)\s+(?:add|include|write|give|offer|provide|append|start\s+with)\s+(?:any\s+|an?\s+)?"
    r"(?:notes?|commentary|explanations?|remarks?|preambles?|prefaces?)"
    r"|(?:^\W*|[,;:]\s*|\band\s+)no\s+(?:\w+\s+)?(?:commentary|explanations?|remarks?|preambles?|prefaces?)"
    # "Skip any introduction and go straight to the answer"
    r"|\b(?:skip|omit|drop)\s+(?:the\s+|any\s+)?(?:preamble|introduction|intro|preface|pleasantries)"
    r"(?=\s+(?:and|,)\s+(?:go|get|jump|start)\b))\b"
    r"(?!\s+(?:on|about|in|inside|within|for\s+each|per|to|of)\b)",
    re.IGNORECASE,
)

#: Text around the output refused: "No other text before or after.", "nothing before or after the table", "no text
#: before **Date:** or after the follow-up section" (not "no text after 10pm").
NOTHING_AROUND_CUE: Final = re.compile(
    r"\b(?:no|without)\s+(?:other|extra|additional)\s+(?:text|words|prose)\s+(?:before|after|around)\b"
    r"|\b(?:no|without)\s+(?:text|words|prose)\s+(?:around\b|before\b[^.\n]{0,60}?\bafter\b)"
    r"|\bnothing\s+(?:else\s+)?(?:around\b|before\s+or\s+after\b)",
    re.IGNORECASE,
)


def _asks_for_no_remarks(sentence: str) -> bool:
    """The output alone: asked for outright ("Return only the rewritten passage"), notes about it or text around it
    refused outright ("Do not add notes or explanations", "No other text before or after."), or said with "only"
    or "before or after" beside the ban on notes (not "add no comments to the code")."""
    if any(cue.search(sentence) is not None for cue in (OUTPUT_ALONE_CUE, NO_NOTES_ADDED_CUE, NOTHING_AROUND_CUE)):
        return True
    return NO_REMARKS_CUE.search(sentence) is not None and (
        re.search(r"\bonly\b|\bbefore\s+or\s+after\b|\bnothing\s+else\b", sentence, re.IGNORECASE) is not None
    )


def _asks_for_contact(sentence: str) -> bool:
    return CONTACT_CUE.search(sentence) is not None and not _refuses(sentence, "contact|reach out|touch")


def _asks_to_act(sentence: str) -> bool:
    return CALL_TO_ACTION_CUE.search(sentence) is not None and not _refuses(sentence, "call|cta|action")


def _asks_for_sourced_claims(sentence: str) -> bool:
    return SOURCED_CUE.search(sentence) is not None


#: "Keep every phone number and web address exactly as written": the input's links reach the response intact.
LINKS_KEPT_CUE: Final = re.compile(
    r"\b(?:keep|preserve|leave|retain|copy|include)\b[^.]{0,80}?\b(?:web\s+address(?:es)?|urls?|links?|hyperlinks?)\b"
    r"[^.]{0,60}?\b(?:exactly|as\s+written|unchanged|intact|verbatim|word\s+for\s+word|as\s+they\s+are)",
    re.IGNORECASE,
)


#: "Keep every measurement, moisture reading, cost, mileage, model and serial number EXACTLY as written", "keep
#: all volumes, concentrations, temperatures and times exactly as written": every figure of the source is kept.
NUMBERS_KEPT_CUE: Final = re.compile(
    r"\b(?:keep|retain|preserve)\s+(?:every|each|all(?:\s+the)?)\s+(?:[\w-]+,?\s+(?:and\s+|or\s+)?){0,8}?"
    r"(?:numbers?|figures?|measurements?|readings?|amounts?|costs?|prices?|doses?|dosages?|volumes?|"
    r"concentrations?|temperatures?|statistics?|mileages?|percentages?|quantities|counts?)\b",
    re.IGNORECASE,
)


def _numbers_kept_draft(sentence: str, inputs: tuple[str, ...]) -> Draft:
    """Every number of the inputs the sentence names ("as it appears in the abstract"), or of all of them where it
    names none, is in the response (``checks.numbers_kept``)."""
    named = [name for name in inputs if re.search(rf"\b{re.escape(name.replace('_', ' '))}\b", sentence, re.I)]
    return Draft(
        "keeps_the_inputs_numbers",
        DATA_PLACEHOLDERS,
        "Every number its inputs give appears in it: none dropped, rounded or converted.",
        f"checks.numbers_kept(response, example, inputs={literal(named or list(inputs))})",
        {"family": "numbers_kept"},
    )


_QUOTES_NOUN: Final = r"(?:quot(?:es?|ations?)|quoted\s+(?:text|words?|passages?|material|speech))"
#: "Quotes are verbatim", "use the approved quotes exactly as given", "do not shorten, merge or improve the
#: quotes", "never paraphrase inside quotation marks", "do not create quotes": what the response quotes, its inputs
#: say word for word. Not "quote one sentence of the statement verbatim" (a quotation asked for, of one input).
QUOTES_VERBATIM_CUE: Final = re.compile(
    rf"\b{_QUOTES_NOUN}\s+(?:are|is|must\s+be|should\s+be|stay|remain)\s+(?:kept\s+|used\s+|reproduced\s+"
    r"|copied\s+|given\s+)?(?:verbatim|word[\s-]for[\s-]word|exactly\s+as\s+(?:given|written|provided|supplied)"
    r"|unchanged|untouched)\b"
    r"|\b(?:use|copy|reproduce|keep|include|insert|give)\s+(?:the\s+|all\s+|every\s+|each\s+|any\s+)?"
    rf"(?:[\w-]+\s+)?{_QUOTES_NOUN}\s+(?:\w+\s+){{0,3}}?(?:verbatim|word[\s-]for[\s-]word|unchanged|as\s+written"
    r"|exactly\s+as\s+(?:given|written|provided|supplied))\b"
    r"|\b(?:do\s+not|don't|never|must\s+not)\s+(?:\w+\s+)?(?:shorten|change|alter|edit|paraphrase|reword|rewrite"
    r"|modify|trim|merge|tidy|correct|improve|invent|fabricate|create|make\s+up)\b[^.]{0,50}?"
    rf"\b(?:inside\s+|within\s+|in\s+)?{_QUOTES_NOUN}",
    re.IGNORECASE,
)


def _asks_for_verbatim_quotes(sentence: str) -> bool:
    return QUOTES_VERBATIM_CUE.search(sentence) is not None


#: A sentence's beginning the response offers its reader: "a hint or sentence starter", "give a sentence stem".
_STARTERS: Final = re.compile(r"\bsentence\s+(?:starters?|stems?|frames?)\b|\bstarters?\b", re.IGNORECASE)


def _quotes_verbatim_draft(sentence: str, inputs: tuple[str, ...]) -> Draft:
    """Every quotation copied from the inputs; where the sentence also asks for sentence starters, not those."""
    starters = _STARTERS.search(sentence) is not None
    flag = ", starters=True" if starters else ""
    code = f"checks.quotes_verbatim(response, example, inputs={literal(list(inputs))}{flag})"
    description = "Every quotation in it (three words or more) is copied word for word from its inputs"
    return Draft(
        "quotes_its_inputs_word_for_word",
        DATA_PLACEHOLDERS,
        description + (" (a sentence starter ending in an ellipsis aside)." if starters else "."),
        code,
        {"family": "quotes_verbatim"},
    )


def _asks_to_keep_links(sentence: str) -> bool:
    return LINKS_KEPT_CUE.search(sentence) is not None


def _kept_from_inputs(family: str, slug: str, description: str) -> Callable[[str, tuple[str, ...]], Draft]:
    """A check that what the inputs hold of a kind reaches the response as written (``checks.<family>``)."""

    def draft(sentence: str, inputs: tuple[str, ...]) -> Draft:
        code = f"checks.{family}(response, example, inputs={literal(list(inputs))})"
        return Draft(slug, DATA_PLACEHOLDERS, description, code, {"family": family})

    return draft


#: What a string carries for the program that shows it: "format placeholders", "HTML tags", "template variables".
_CODE_NOUNS: Final = (
    r"(?:format\s+|formatting\s+|template\s+)?(?:placeholders?|codes?|specifiers?|variables?|tokens?)|"
    r"(?:html|xml|markup)\s+(?:tags?|elements?)|markup"
)
#: "Keep format placeholders exactly as they are (for example %1$s)", "keep HTML tags intact", "never translate,
#: renumber or drop the placeholders": the input's codes reach the response as written. An instruction is one
#: sentence, so the gaps run to a line's end: the examples it gives ("<b>...</b>") hold periods.
CODES_KEPT_CUE: Final = re.compile(
    rf"\b(?:keep|preserve|leave|retain|copy)\b[^\n]{{0,40}}?\b(?:{_CODE_NOUNS})\b[^\n]{{0,60}}?"
    r"\b(?:exactly|as\s+(?:they\s+are|it\s+is|is|written)|unchanged|intact|untouched|verbatim|untranslated)|"
    r"\b(?:do\s+not|don't|never)\s+(?:translate|change|alter|modify|remove|drop|touch|rename|renumber)\b"
    rf"[^\n]{{0,40}}?\b(?:{_CODE_NOUNS})\b",
    re.IGNORECASE,
)


def _asks_to_keep_codes(sentence: str) -> bool:
    return CODES_KEPT_CUE.search(sentence) is not None


#: "Leave our product names in English: Pocketly, Round-Ups and Spending Pots", "do not translate these brand
#: names: ...": names the response keeps as the source writes them, listed after the colon.
TERMS_KEPT_CUE: Final = re.compile(
    r"\b(?:keep|leave|retain|preserve)\b[^.:]{0,60}?\b(?:names?|terms?|words?|brands?)\b[^.:]{0,40}?"
    r"(?:\bin\s+(?:english|the\s+original)|\buntranslated|\bunchanged|\bas\s+(?:they\s+are|is|written))\s*:|"
    r"\b(?:do\s+not|don't|never)\s+translate\b[^.:]{0,60}?\b(?:names?|terms?|words?|brands?)\b[^.:]{0,60}?:",
    re.IGNORECASE,
)


def kept_terms(sentence: str) -> list[str]:
    """The names listed after the colon of a sentence that asks to keep them untranslated, parenthesised forms
    among them ("Spending Pots (singular: Spending Pot)"); none when the sentence asks no such thing."""
    cue = TERMS_KEPT_CUE.search(sentence)
    if cue is None:
        return []
    listed = sentence[cue.end() :]
    inner = [part.split(":")[-1] for part in re.findall(r"\(([^)]*)\)", listed)]
    outer = re.sub(r"\([^)]*\)", ",", listed)
    terms = []
    for piece in re.split(r",|;|\band\b|\bor\b", " , ".join([outer, *inner])):
        term = piece.strip().strip("\"“”'`.").strip()
        if term and term[0].isupper() and len(term.split()) <= 4 and term not in terms:
            terms.append(term)
    return terms


def kept_terms_input(sentence: str) -> str | None:
    """The input that lists the terms to keep, where the sentence hands them over as one placeholder after its
    colon ("Do not translate these terms; copy them exactly as written: {keep_terms}")."""
    cue = TERMS_KEPT_CUE.search(sentence)
    listed = re.fullmatch(r"\s*\{\{?\s*(\w+)\s*\}?\}\s*\.?\s*", sentence[cue.end() :]) if cue else None
    return listed.group(1) if listed else None


def _asks_to_keep_terms(sentence: str) -> bool:
    return bool(kept_terms(sentence)) or kept_terms_input(sentence) is not None


def _terms_kept_draft(sentence: str, inputs: tuple[str, ...]) -> Draft:
    field = kept_terms_input(sentence)
    if field is not None:
        return Draft(
            f"keeps_the_{field}",
            DATA_PLACEHOLDERS,
            f"Keeps each term the input `{field}` lists as written wherever the other inputs use it.",
            f"checks.terms_kept(response, example, checks.value(example, {literal(field)}))",
            {"family": "terms_kept", "field": field},
        )
    terms = kept_terms(sentence)
    shown = ", ".join(f"“{term}”" for term in terms)
    return Draft(
        "keeps_the_names",
        DATA_PLACEHOLDERS,
        f"Keeps each of {shown} as written wherever its inputs use it.",
        f"checks.terms_kept(response, example, {literal(terms)}, inputs={literal(list(inputs))})",
        {"family": "terms_kept", "phrases": terms},
    )


_REFERENCE_NOUNS: Final = {
    "ids": r"ids?|identifiers?|reference(?:\s+numbers?)?|codes?|skus?|part\s+numbers?"
    r"|(?:ticket|order|case|claim|permit|batch|product|item|policy|account|invoice|tracking)\s+numbers?",
    "links": r"urls?|links?|web\s+address(?:es)?|hyperlinks?|websites?",
    "timestamps": r"timestamps?|time\s*codes?",
    "standard_ids": r"dois?|isbns?|issns?",
}
_ANY_REFERENCE_NOUN: Final = "|".join(_REFERENCE_NOUNS.values())
#: "Don't make up an ID", "use ONLY the links listed below", "only timestamps that actually appear in the
#: transcript", "NEVER make up a DOI, ISBN or ISSN": the identifiers, links, timestamps or standard numbers the
#: response writes are the source's.
SOURCED_CODES_CUE: Final = re.compile(
    rf"\b(?:don't|do\s+not|never|no)\s+(?:\w+\s+){{0,2}}?(?:make\s+up|mak\w+\s+up|invent\w*|fabricat\w*|guess\w*)\s+"
    rf"(?:an?\s+|any\s+|the\s+|new\s+)?(?:[\w-]+\s+)?(?:{_ANY_REFERENCE_NOUN})\b"
    rf"|\bonly\s+(?:(?:use|list|include|give|add|cite|share|mention)\s+)?(?:the\s+)?(?:{_ANY_REFERENCE_NOUN})\s+"
    r"(?:that\s+(?:actually\s+)?(?:appear|are)|listed|given|provided|from|in\s+the)\b"
    # "no new phone numbers, websites, office hours": none the source lacks
    rf"|\bno\s+new\s+(?:[\w-]+(?:\s+[\w-]+)?\s*,\s*(?:or\s+|and\s+)?){{0,4}}(?:{_ANY_REFERENCE_NOUN})\b"
    rf"|\buse\s+only\s+(?:the\s+)?(?:{_ANY_REFERENCE_NOUN})\s+(?:listed|given|provided|below|above|in|from)\b",
    re.IGNORECASE,
)


def _asks_for_sourced_codes(sentence: str) -> bool:
    return SOURCED_CODES_CUE.search(sentence) is not None


def _sourced_codes_draft(sentence: str, inputs: tuple[str, ...]) -> Draft:
    """The kinds the sentence names ("make up URLs": links), each written only as the source has it."""
    cue = SOURCED_CODES_CUE.search(sentence)
    named = cue.group(0) if cue else sentence
    kinds = [kind for kind, nouns in _REFERENCE_NOUNS.items() if re.search(rf"\b(?:{nouns})\b", named, re.IGNORECASE)]
    described = {
        "ids": "identifier",
        "links": "web address",
        "timestamps": "timestamp",
        "standard_ids": "DOI, ISBN or ISSN",
    }
    return Draft(
        f"states_only_sourced_{'_'.join(kinds)}",
        EXCLUSION,
        f"Every {' or '.join(described[kind] for kind in kinds)} it writes is one its inputs give, as written.",
        f"checks.sourced_codes(response, example, prompt, kinds={literal(kinds)}, inputs={literal(list(inputs))})",
        {"family": "sourced_codes", "kinds": kinds},
    )


def _sourced_numbers_draft(sentence: str, inputs: tuple[str, ...]) -> Draft:
    """The figures come from the prompt as the model saw it: an example that lacks one of its inputs shows a
    prompt the model never saw, so the check does not apply to it."""
    return Draft(
        "states_only_sourced_numbers",
        EXCLUSION,
        "Every number it states is one its inputs give (or a rounding of one): no invented figures.",
        f"checks.sourced_numbers(response, example, prompt, inputs={literal(list(inputs))})",
        {"family": "sourced_numbers"},
    )


#: What a grounding sentence keeps to its source besides figures: names of people, places, products, programs;
#: facts and details at large. "Don't invent ticket numbers" or "keep all dates unchanged" is about figures alone.
_NAMED_THINGS: Final = re.compile(
    r"\b(?:names?|people|persons?|anyone|anybody|places?|locations?|venues?|brands?|products?|compan(?:y|ies)|"
    r"organi[sz]ations?|facts?|things|anything|information|details|credentials|awards?|ingredients?|varieties|"
    r"features?|certifications?|specs?|events?|roles?|activities|programs?|programmes?|references?|regulations?|"
    r"models?|partners?|sponsors?|suppliers?|meaning|claims?|content|candidates?|rumou?rs?|items?|extras?)\b",
    re.IGNORECASE,
)
_FIGURE_WORDS: Final = re.compile(
    r"\b(?:numbers?|figures?|amounts?|prices?|dates?|times?|statistics?|percentages?|values?|ids?|codes?)\b",
    re.IGNORECASE,
)
#: "never invent new locations, people or names", "don't make up product names": a ban on names the source lacks.
_INVENTED_NAMES: Final = re.compile(
    r"\b(?:don't|do\s+not|never|no|avoid|without)\s+(?:\w+\s+){0,2}?(?:mak\w*\s+(?:\w+\s+)?up|invent\w*|"
    r"fabricat\w*|guess\w*)\s+(?:[\w-]+,?\s+){0,8}?(?:names?|people|persons?|places?|locations?|brands?|products?|"
    r"compan(?:y|ies)|organi[sz]ations?|credentials|awards?|ingredients?|varieties|certifications?|programs?)\b",
    re.IGNORECASE,
)


def _asks_for_sourced_names(sentence: str) -> bool:
    if _INVENTED_NAMES.search(sentence):
        return True
    return _asks_for_sourced_claims(sentence) and (
        _NAMED_THINGS.search(sentence) is not None or _FIGURE_WORDS.search(sentence) is None
    )


def _sourced_names_draft(sentence: str, inputs: tuple[str, ...]) -> Draft:
    """The names come from the prompt as the model saw it, as the figures do (:func:`_sourced_numbers_draft`)."""
    return Draft(
        "states_only_sourced_names",
        EXCLUSION,
        "Every name it writes (a capitalised word inside a sentence, an acronym) is one its inputs give: no invented"
        " people, places, products or programs.",
        f"checks.sourced_names(response, example, prompt, inputs={literal(list(inputs))})",
        {"family": "sourced_names"},
    )


#: "Reply with a single number between 1 and 10", "a rating from 1 to 5", "score it on a scale of 0-100".
NUMBER_RANGE_CUE: Final = re.compile(
    r"\b(?:number|integer|score|rating|grade|rank|value|scale)\b[^.]{0,40}?\b(?:between|from|of)\s+"
    r"(-?\d+(?:\.\d+)?)\s*(?:and|to|-|–)\s*(-?\d+(?:\.\d+)?)\b",
    re.IGNORECASE,
)


def _asks_for_a_number_in_range(sentence: str) -> bool:
    match = NUMBER_RANGE_CUE.search(sentence)
    return match is not None and float(match.group(1)) < float(match.group(2))


#: The JSON key a number's rule is said of: '"priority" must be an integer from 1 to 5', 'Set "confidence" to a number
#: between 0 and 1', 'The "amount" field must be a number'.
NUMBER_KEY: Final = re.compile(
    r"[\"“'`](?P<key>[a-z_][\w-]{0,30})[\"”'`]\s+(?:field\s+|key\s+|value\s+)?(?:must|should|has\s+to|needs\s+to|is\s+to)"
    r"\s+be\b|\bset\s+[\"“'`](?P<set>[a-z_][\w-]{0,30})[\"”'`]\s+to\b",
    re.IGNORECASE,
)


def _number_range_draft(sentence: str, inputs: tuple[str, ...]) -> Draft:
    match = NUMBER_RANGE_CUE.search(sentence)
    assert match is not None  # drafted only where _asks_for_a_number_in_range holds
    low, high = (float(group) if "." in group else int(group) for group in match.groups())
    keyed = NUMBER_KEY.search(sentence[: match.start() + 1])
    if keyed is not None:  # a JSON key's number: every value it holds, not the response's first number
        return number_range_draft(keyed.group("key") or keyed.group("set"), low, high)
    return Draft(
        f"number_from_{low}_to_{high}",
        PRESENTATION_FORMAT,
        f"The first number it states is between {low} and {high}.",
        f"checks.number_in_range(response, {literal(low)}, {literal(high)})",
        {"family": "number_range", "min": low, "max": high},
    )


def _ends_with_list_draft(sentence: str, inputs: tuple[str, ...]) -> Draft:
    return Draft(
        "nothing_after_the_list",
        PRESENTATION_FORMAT,
        "Ends with its list: no text follows the last list item.",
        "checks.ends_with_list(response)",
        {"family": "ends_with_list"},
    )


#: "in Title Case", "title-cased", "capitalize every word".
TITLE_CASE_CUE: Final = re.compile(
    r"\btitle[\s-]?case[ds]?\b|\bcapitali[sz]e\s+(?:the\s+first\s+letter\s+of\s+)?(?:each|every|all)\s+"
    r"(?:major\s+)?words?\b",
    re.IGNORECASE,
)
#: The one-line parts a title case can be asked of.
_TITLED_PARTS: Final = ("headline", "title", "tagline", "subject line", "slogan", "name")


def _asks_for_title_case(sentence: str) -> bool:
    """ "in Title Case", but not of headings (their text is not the title's case once read) nor refused."""
    return (
        TITLE_CASE_CUE.search(sentence) is not None
        and not _refuses(sentence, r"title[\s-]?case|capitali")
        and re.search(r"\b(?:headings|headers)\b", sentence, re.IGNORECASE) is None
    )


def _title_case_draft(sentence: str, inputs: tuple[str, ...]) -> Draft:
    """Every line in title case ("each headline", "three headlines", "write in title case"), or the first line
    where the sentence names one title ("give the post a title in Title Case"; a response that is only the title
    is its first line)."""
    lowered = TITLE_CASE_CUE.sub(" ", sentence.lower())  # the "title" of "title case" names no part
    named = [part for part in _TITLED_PARTS if re.search(rf"\b{part}s?\b", lowered)]
    every = not named or any(re.search(rf"\b(?:each|every|all)\s+{part}s?\b|\b{part}s\b", lowered) for part in named)
    return Draft(
        "title_case" if every else "title_line_in_title_case",
        PRESENTATION_FORMAT,
        f"Title Case on {'every line' if every else 'the first line'} (minor words aside).",
        "checks.title_case(response)" if every else "checks.title_case(response, lines=1)",
        {"family": "title_case", "lines": None if every else 1},
    )


def _fixed_draft(name: str, description: str, expression: str, family: str) -> Callable[[str, tuple[str, ...]], Draft]:
    """A check the sentence's cue alone decides, the same for every sentence that asks for it."""

    def draft(sentence: str, inputs: tuple[str, ...]) -> Draft:
        return Draft(name, PRESENTATION_FORMAT, description, expression, {"family": family})

    return draft


def _cued_by(cue: re.Pattern[str]) -> Callable[[str], bool]:
    return lambda sentence: cue.search(sentence) is not None


def _words_draft(family: str, description: str, phrases: tuple[str, ...]) -> Callable[[str, tuple[str, ...]], Draft]:
    """A check that the response says one of ``phrases`` (with their inflections)."""

    def draft(sentence: str, inputs: tuple[str, ...]) -> Draft:
        code = f"checks.contains_any(response, {literal(list(phrases))})"
        return Draft(family, INCLUSION, description, code, {"family": family, "phrases": list(phrases)})

    return draft


#: Checks a sentence asks for by its cue words alone: family -> (whether the sentence asks for it, its check, read
#: from the sentence, for a prompt with these inputs). Both synthesizers read them here: the offline one writes
#: each asked for, the LLM one offers them to the model and writes the ones it missed.
CUED: Final[dict[str, tuple[Callable[[str], bool], Callable[[str, tuple[str, ...]], Draft]]]] = {
    "ends_with_list": (_asks_to_end_with_list, _ends_with_list_draft),
    "only_list": (_asks_for_only_a_list, _only_list_draft),
    "only_tags": (
        _cued_by(ONLY_TAGS_CUE),
        _fixed_draft(
            "only_the_tagged_parts",
            "Is its tagged parts and nothing else: no text outside the tags.",
            "checks.only_tags(response)",
            "only_tags",
        ),
    ),
    "only_code": (
        _cued_by(ONLY_CODE_CUE),
        _fixed_draft(
            "only_the_code_block",
            "Is one fenced code block and nothing else: no introduction, no explanation after it.",
            "checks.only_code_block(response)",
            "only_code",
        ),
    ),
    "calculations": (
        _cued_by(CALCULATION_CUE),
        _fixed_draft(
            "calculations_hold",
            "Every calculation it writes out (“7 x 9 = 63”) comes to the result it states.",
            "checks.calculations_hold(response)",
            "calculations",
        ),
    ),
    "overview_first": (
        _cued_by(OVERVIEW_FIRST_CUE),
        _fixed_draft(
            "opens_with_prose",
            "Opens with a line of prose: no list item, heading or table before it.",
            "checks.opens_with_prose(response)",
            "overview_first",
        ),
    ),
    "items_bold": (
        _cued_by(BOLD_EACH_CUE),
        _fixed_draft(
            "each_item_bold",
            "Every bullet item (every numbered one, without bullets) holds a bold span.",
            "checks.items_bold(response)",
            "items_bold",
        ),
    ),
    "no_remarks": (
        _asks_for_no_remarks,
        _fixed_draft(
            "no_remarks",
            "Is the output alone: no opening that presents it (“Here's ...:”), no note about it (“Note: ...”).",
            "not checks.adds_remarks(response)",
            "no_remarks",
        ),
    ),
    "title_case": (_asks_for_title_case, _title_case_draft),
    "sourced_numbers": (_asks_for_sourced_claims, _sourced_numbers_draft),
    "sourced_names": (_asks_for_sourced_names, _sourced_names_draft),
    "sourced_codes": (_asks_for_sourced_codes, _sourced_codes_draft),
    "links_kept": (
        _asks_to_keep_links,
        _kept_from_inputs(
            "links_kept", "keeps_the_inputs_links", "Every web address its inputs give appears in it as written."
        ),
    ),
    "codes_kept": (
        _asks_to_keep_codes,
        _kept_from_inputs(
            "codes_kept",
            "keeps_the_inputs_codes",
            "Every format code, placeholder and markup tag its inputs give appears in it as written.",
        ),
    ),
    "numbers_kept": (_cued_by(NUMBERS_KEPT_CUE), _numbers_kept_draft),
    "quotes_verbatim": (_asks_for_verbatim_quotes, _quotes_verbatim_draft),
    "terms_kept": (_asks_to_keep_terms, _terms_kept_draft),
    "number_range": (_asks_for_a_number_in_range, _number_range_draft),
    "invites_contact": (
        _asks_for_contact,
        _words_draft(
            "invites_contact", "Invites the reader to get in touch (contact, reach out, ...).", CONTACT_PHRASES
        ),
    ),
    "call_to_action": (
        _asks_to_act,
        _words_draft(
            "call_to_action",
            "Asks the reader to act (a call to action: try, sign up, get started, click, ...).",
            CALL_TO_ACTION_PHRASES,
        ),
    ),
}
