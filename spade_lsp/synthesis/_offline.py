"""The offline synthesizer: real checks parsed from instruction sentences, no model needed.

Each parser looks for its own cue (a bound and a unit, a format name, quoted phrases, an input field, an
example block, a tone word) and yields checks written against :mod:`spade_lsp.checks`. A criterion that no
measurement captures becomes an ``ask_llm`` yes/no question, which runs only when a model is configured.

A candidate exists only when its check measures what the sentence asks:
- phrases are checked whole (with inflections), never by their single words; a quoted phrase is a literal
  term only when a verb or a word frame governs it ("never use the word 'cheap'"), not when it describes a
  kind of thing ('an "existing user" email');
- the object of a style verb ("avoid jargon", "use a warm tone", "don't be vague"), a graded or abstract
  noun ("all relevant context"), a slot whose value appears ("the title"), a kind of element ("a call to
  action") and a pronoun-led object ("their definitions") are qualities, not words: they get a measured
  check where a library gives one (readability, tone) and an ``ask_llm`` question;
- a negation counts only in its own clause ("... acceptable if the text does not provide X" bans nothing);
- equivalent checks are one candidate listing every sentence it serves;
- removed and reworded instructions of earlier versions (``PromptContext.earlier``) yield candidates too,
  marked with the version that removed them (a removed limit may be a relaxed one).
Vague criteria get one measured reading each; selection keeps the ones the labelled examples support.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
from collections.abc import Iterator, Sequence
from functools import lru_cache
from typing import Any, Final

from spade_lsp._sentences import split_sentences
from spade_lsp.checks import BODY_NAMES, FORM_SLOT
from spade_lsp.checks import contains_phrase as checks_contains_phrase
from spade_lsp.synthesis import PLACEHOLDER_PATTERN, Candidate, Instruction, PromptContext
from spade_lsp.synthesis import _library as library
from spade_lsp.synthesis._library import (
    PART_KINDS,
    edge_draft,
    edge_refused,
    ends_with_question_draft,
    json_draft,
    language_draft,
    markdown_draft,
    markdown_refused,
    mentions_draft,
    phrases_draft,
    same_language_draft,
)
from spade_lsp.synthesis._library import (
    Draft as _Draft,
)
from spade_lsp.synthesis._library import count_draft as _count_draft
from spade_lsp.synthesis._library import heading_draft as _heading_draft
from spade_lsp.synthesis._library import literal as _literal
from spade_lsp.synthesis._library import slug as _slug
from spade_lsp.taxonomy import (
    DATA_PLACEHOLDERS,
    EXAMPLE_DEMONSTRATION,
    EXCLUSION,
    INCLUSION,
    PRESENTATION_FORMAT,
    QUALITATIVE_ASSESSMENT,
    WORKFLOW_DESCRIPTION,
)

NAME: Final = "offline"

_NUMBER_WORDS: Final = {
    "zero": 0, "no": 0, "one": 1, "a single": 1, "single": 1, "two": 2, "a couple of": 2, "a pair of": 2,
    "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11,
    "twelve": 12, "a dozen": 12, "fifteen": 15, "twenty": 20, "thirty": 30, "fifty": 50, "hundred": 100,
}  # fmt: skip

_UNITS: Final = {
    "words": "words", "word": "words",
    "sentences": "sentences", "sentence": "sentences",
    "characters": "characters", "character": "characters", "chars": "characters", "letters": "characters",
    "bullet points": "bullets", "bullet point": "bullets", "bullets": "bullets", "bullet": "bullets",
    "numbered items": "numbered_items", "numbered points": "numbered_items",
    "paragraphs": "paragraphs", "paragraph": "paragraphs",
    "lines": "lines", "line": "lines",
    "hashtags": "hashtags", "hashtag": "hashtags",
    "emojis": "emojis", "emoji": "emojis",
    "headings": "headings", "headers": "headings", "sections": "headings",
    "code blocks": "code_blocks", "code block": "code_blocks",
    "code fences": "code_blocks", "code fence": "code_blocks", "fences": "code_blocks", "backticks": "code_blocks",
    "links": "links", "link": "links", "urls": "links", "url": "links", "hyperlinks": "links",
    "key points": "list_items", "items": "list_items", "points": "list_items", "tips": "list_items",
    "steps": "list_items", "reasons": "list_items", "ideas": "list_items", "questions": "list_items",
    "suggestions": "list_items", "options": "list_items", "recommendations": "list_items",
    "takeaways": "list_items", "exercises": "list_items", "examples": "list_items", "features": "list_items",
    "benefits": "list_items", "advantages": "list_items", "facts": "list_items", "ways": "list_items",
    "strategies": "list_items", "prompts": "list_items", "headlines": "list_items", "titles": "list_items",
    "taglines": "list_items", "slogans": "list_items", "captions": "list_items", "alternatives": "list_items",
    "variations": "list_items",
    # what a review lists: "Point out at most 3 issues", "name the top 2 risks"
    "issues": "list_items", "problems": "list_items", "concerns": "list_items", "risks": "list_items",
    "mistakes": "list_items", "improvements": "list_items", "bugs": "list_items",
    "tweets": "tweets",  # "a thread of {n} tweets": its pieces, numbered or one per paragraph
    "numbering": "numbered_items",  # "put each on its own line, without numbering"
    # only ever banned ("no bold/headers", "don't use bold text"): "one bold claim" counts no bold spans
    "bold": "bold", "bold text": "bold", "bolding": "bold", "boldface": "bold", "bold formatting": "bold",
    # only ever banned: "no phone numbers", "never am/pm"
    "phone numbers": "phone_numbers", "telephone numbers": "phone_numbers",
    "phone number": "phone_numbers", "telephone number": "phone_numbers",
    "email addresses": "emails", "emails": "emails", "e-mail addresses": "emails",
    "email address": "emails", "e-mail address": "emails",
    "am/pm": "am_pm_times", "am/pm times": "am_pm_times",
    "commit hashes": "commit_hashes", "commit hash": "commit_hashes", "commit ids": "commit_hashes",
    "commit shas": "commit_hashes", "shas": "commit_hashes",  # not bare "hashes": "no hashes" may mean "#" marks
    "drug doses": "doses", "doses": "doses", "dosages": "doses", "dosage": "doses", "dose amounts": "doses",
    "medication doses": "doses",
    "card numbers": "card_numbers", "card number": "card_numbers",  # "never copy full card numbers into the note"
    "card or account numbers": "card_numbers", "card and account numbers": "card_numbers",  # one kind, elided
    "card or account number": "card_numbers",
}  # fmt: skip
#: Units that are only ever banned, never counted to a number ("the text delimited by three backticks" is an input's
#: fence).
_BANNED_ONLY: Final = frozenset(
    word
    for word, unit in _UNITS.items()
    if unit in {"bold", "phone_numbers", "emails", "am_pm_times", "commit_hashes", "doses", "card_numbers"}
) | {"fences", "backticks"}

_AT_MOST: Final = (
    r"no more than|not more than|at most|up to|"
    r"(?:not|never|without|cannot|don't|doesn't|won't|shouldn't|mustn't|can't)\s+(?:to\s+)?exceed(?:s|ing)?|"
    r"a maximum of|maximum of|max\.?|max(?:imum)?[_ ]?(?:length|words|size)\s*:|"
    r"(?:(?:hard|strict|firm|absolute|word|length|character|char|size)[_ ]?)*limit\s*(?:is\s*)?:|maximum|"
    r"no longer than|not be longer than|n't be longer than|not longer than|"
    r"limit(?:ed|s)?\s+(?:[\w'\"“”`]+\s+){0,3}?to|keep\s+(?:[\w']+\s+){0,3}?to|restrict(?:ed|s)?\s+(?:[\w']+\s+){0,3}?to|"
    r"cap(?:ped|s)?\s+(?:[\w']+\s+){0,3}?(?:at|to)|(?:within |under |to )?(?:the |a )?(?:limit|maximum|max) of|within|"
    r"(?:shouldn't|should not|must not|mustn't|cannot|can't|not) be (?:longer|"
    r"more) than"
)
_BELOW: Final = r"fewer than|less than|under|below|shorter than"
_AT_LEAST: Final = r"at least|no fewer than|no less than|not fewer than|not less than|a minimum of|minimum of|minimum"
#: "past" and "beyond" bound a count only when negated: "must not go beyond 120 words", not "the past 3 days".
_ABOVE: Final = r"more than|over|longer than|past|beyond"
_ABOUT: Final = r"about|around|approximately|roughly|circa|close to|~"
#: How far an approximate count ("about 200 words") may stray either way and still be what was asked.
_APPROXIMATE: Final = 0.25
#: Words between a number and its unit that make it count other things: "two newline characters", "two blank
#: lines", "three more sentences" say nothing about how many characters, lines or sentences the response has.
_OTHER_THINGS: Final = (
    "newline|new|blank|empty|special|unicode|ascii|non-ascii|whitespace|space|trailing|leading|extra|additional|"
    "more|other|further|consecutive|capital|uppercase|lowercase|chinese|japanese|levels?|kinds?|types?|sorts?"
)


#: Output nouns that mean the whole response rather than one section of it.
_WHOLE_RESPONSE: Final = frozenset(
    {"response", "answer", "output", "result", "reply", "text", "message", "email", "it", "summary", "review"}
)
#: Parts of a response that are never the whole of it: a limit on one of them is the part's alone.
_PARTS: Final = frozenset(
    {
        "title", "headline", "subject", "subject line", "heading", "header", "name", "tagline", "slogan", "intro",
        "introduction", "opening", "conclusion", "closing", "greeting", "sign-off", "signature", "hook",
        "first sentence", "first line", "last sentence", "last line", "body",
    }
)  # fmt: skip
_CONDITIONAL = re.compile(
    # "If ...", and after a topic's label: "varroa: if count > 3 per 100 bees, ..."
    r"^\s*(?:-\s*)?(?:[\w -]{1,30}:\s*)?(?:if|when|where|unless|in case)\b|\b(?:if|where|when) (?:necessary|needed|"
    r"applicable|appropriate|possible|relevant)\b"
    # "mention the warranty if the customer asks about returns": only some answers owe it ("even if asked" is owed
    # by all)
    # (an if-clause after a verb of asking is what is asked, not a condition: "a question asking if there is ...")
    r"|(?<!\beven\s)(?<!\basking\s)(?<!\bask\s)(?<!\basks\s)(?<!\bcheck\s)(?<!\bchecking\s)(?<!\bsee\s)"
    r"\b(?:if|when|whenever|unless)\s+(?:the\s+|a\s+|an\s+)?(?:user|customer|client|reader|input|question|query|"
    r"text|message|request|document|they|he|she|it|there|asked|none|nothing|nobody|no\s+one)\b",
    re.IGNORECASE,
)
_QUOTED = re.compile(
    r"\"([^\"\n]{1,60})\"|“([^”\n]{1,60})”|‘([^’\n]{1,60})’|`([^`\n]{1,60})`|(?<!\w)'([^'\n]{1,60})'(?!\w)"
)
_INCLUDE_CUE = re.compile(
    r"\b(?:includ(?:e|es|ed|ing)|mention(?:s|ed|ing)?|contain(?:s|ed|ing)?|add(?:s|ed|ing)?|us(?:e|es|ed|ing)|"
    r"cit(?:e|es|ed|ing)|show(?:s|n|ed|ing)?|provid(?:e|es|ed|ing)|list(?:s|ed|ing)?|stat(?:e|es|ed|ing)|"
    r"referenc(?:e|es|ed|ing)|quot(?:e|es|ed|ing)|must have|always)\b",
    re.IGNORECASE,
)
_EXCLUDE_CUE = re.compile(  # and a constraint written as a fragment: "No exclamation marks", "... - no emojis"
    r"(?:^|(?<=[,;:.!?]\s)|(?<=\s[-–—]\s)|(?<=—))(?:(?:so|and|but|also|therefore)\s+)?no\s+"
    r"(?!(?:more|fewer|less|longer|later|need|matter|one|sooner)\b)"
    r"(?=[a-z\"“'‘@#])"
    r"|\b(?:contains?|includes?|uses?|has|have)\s+no\b(?!\s+(?:more|fewer|less)\b)"  # "it contains no hype words"
    # "Follow the code: nothing that encourages drinking quickly (e.g. "smashable")": a ban written as a fragment
    r"|(?:^|(?<=[,;:]\s)|(?<=\s[-–—]\s))(?:(?:and|but|also)\s+)?nothing\s+"
    r"(?=(?:that|which|linking|implying|suggesting|encouraging|promising|about)\b)"
    r"|\b(?:never|don't|do not|does not|doesn't|avoid(?:ing)?|without|refrain from|exclude|must not|mustn't|"
    r"shouldn't|should not|cannot|can't|not include|not mention|not use|not add|not give|not say|not make)\b",
    re.IGNORECASE,
)
#: Words that open a condition: a negation in a clause one of them opens states a condition and bans nothing
#: ("Omission is acceptable if the text does not provide ..."). Relative and complement clauses ("make sure
#: that you do not mention X", "a reply which does not mention X") and time clauses are no conditions.
_CONDITION = re.compile(r"\b(?:if|unless|in case|as long as|even if|except|whenever)\b", re.IGNORECASE)
_CLAUSE_BREAK = re.compile(r"[,;:()\u2014]|\s-\s|\.\s")
#: Verbs whose negation bans content (a topic, a term): "do not mention prices".
_CONTENT_VERBS = (
    r"includ(?:e|es|ing)|mention(?:s|ing)?|contain(?:s|ing)?|add(?:s|ing)?|say(?:s|ing)?|giv(?:e|es|ing)|"
    r"provid(?:e|es|ing)|show(?:s|ing)?|cit(?:e|es|ing)|list(?:s|ing)?|stat(?:e|es|ing)|discuss(?:es|ing)?|"
    r"talk(?:s|ing)? about|refer(?:s|ring)? to|reference|writ(?:e|es|ing)|output|print|reveal|disclose|name|"
    r"quot(?:e|es|ing)"
)
#: Verbs whose object names a way of writing when negated ("avoid jargon", "don't use slang") and a thing to
#: include otherwise ("use the customer's name"): they ban a literal term only with a word frame or a quote.
_STYLE_VERBS = r"avoid(?:ing)?|refrain from|us(?:e|es|ing)|mak(?:e|es|ing)|be|sound|get|keep|employ"
#: Words after which a verb's object has ended: "mention prices if asked", "list tips for beginners".
_OBJECT_END = (
    r"if|when|unless|except|that|which|who|whose|for|with|in|from|about|around|across|within|without|between|behind|"
    r"beyond|during|through|under|over|after|before|like|such|including|on|at|by|as|into|per|via|regarding|so|"
    r"because|but|even|while|encouraging|no\s+matter|regardless|however|whatever|"
    r"to\s+(?:the|a|an|help|make|ensure|be)\b"
)
_OBJECT_ITEM = r"[A-Za-z0-9][A-Za-z0-9 '\-]{1,80}?"  # "the 3D printer filament fees"
#: A verb and its object, which may be a list ("discounts, coupons or competitors"): a further item after a
#: comma starts with neither a clause word nor a pronoun ("prices, as this ...", "prices, you ...").
_NAMED_OBJECT = re.compile(
    # a verb, not the end of a compound ("the tap-list blurbs")
    rf"(?<![\w-])(?P<verb>{_CONTENT_VERBS}|{_STYLE_VERBS}|the (?:key)?words?|the phrases?|the terms?)\s+"
    rf"(?P<object>{_OBJECT_ITEM}(?:\s*,\s*(?:(?:or|and)\s+)?"
    rf"(?!(?:{_OBJECT_END}|and|or|then|also|i|you|we|they|he|she|it|this|these|those|there|please)\b){_OBJECT_ITEM})*)"
    rf"(?=[.,;:!?()\u2014]|\s+(?:{_OBJECT_END})\b|$)",
    re.IGNORECASE,
)
#: A quoted phrase is a literal term when a word frame or a verb governs it ("use the word 'X'", "say 'X'",
#: "words like: 'A', 'B'"); otherwise it describes a kind of thing ('an "existing user" email', 'a "Call To
#: Action"') and no word check follows from it.
_LITERAL_FRAME = re.compile(
    r"(?:\b(?:words?|phrases?|terms?|expressions?|strings?|keywords?|greetings?|sign-?offs?|slogans?|tags?|"
    r"labels?|names?|text)\b(?:\s+(?:like|such as|as|including|e\.g\.|namely))?\s*:?\s*"
    r"|\b(?:" + _CONTENT_VERBS + r"|us(?:e|es|ing)|avoid(?:ing)?|refrain from|with)\s+(?:the\s+)?"
    # "never describe anything as "fully accessible"", "don't call it "cheap"", "refer to them as "clients""
    r"|\b(?:describ\w*|call\w*|label\w*|refer\w*\s+to|present\w*|advertis\w*|market\w*)\s+(?:[\w'-]+\s+){0,2}?as\s+"
    r"|(?:^|[:;,.!?]\s*|\s[-–—]\s*)no\s+)$",  # 'Do not minimise it: no "out of an abundance of caution", ...'
    re.IGNORECASE,
)
#: What introduces examples of a kind a sentence bans: the quoted examples are terms it bans.
_EXAMPLE_FRAME = re.compile(r"\b(?:such as|like|e\.g\.,?|for example,?|for instance,?|including)\s*:?\s*$", re.I)
#: A ban that reaches to a banned value's parts and roots: "any part of it that is 4 or more letters long", "or any
#: word sharing its root", "a word from the same root".
_PART_OF_IT: Final = re.compile(
    r"\bany\s+part\s+of\s+(?:it|them|the\s+\w+)\b(?:[^,.;]*?\b(?P<letters>\d+)\s+(?:or\s+more\s+)?letters?\b)?"
    r"|\b(?:sharing|shares|share|from|with)\s+(?:its|their|the\s+same)\s+root\b",
    re.IGNORECASE,
)
#: A quotation the ban reaches even to: 'Don't guess, not even a "usually"'.
_NOT_EVEN = re.compile(r"\bnot\s+even\s+(?:an?\s+|the\s+|one\s+)?$", re.IGNORECASE)
#: Quotations a bracket opens on, right after what they illustrate: 'summary comments ("Nice work!", "LGTM")'.
_OPENING_BRACKET = re.compile(r"\w\s*\(\s*$")
#: Adjectives that grade content rather than name it: "relevant context", "rich color", "helpful summary".
_EVALUATIVE: Final = frozenset(
    """relevant rich important key useful helpful clear concise specific concrete detailed accurate brief short
    simple appropriate necessary meaningful additional general vague generic complex complicated technical
    unnecessary irrelevant actionable engaging compelling personal professional informal formal friendly polite
    correct complete comprehensive thorough interesting insightful significant main major minor critical
    essential proper good best great nice real real-world common certain various other more less own new
    excessive long lengthy difficult hard easy plain flowery fancy overly too negative positive biased
    subjective objective explicit implicit obvious redundant repetitive superfluous extra enough sufficient
    much many several few any all every each total estimated approximate average exact""".split()  # noqa: SIM905
)
#: Nouns that name a kind of content, a quality of writing or a slot whose value appears (a title, a date), not
#: a term that appears in it: a check for the word itself measures nothing ("avoid jargon" never means "do not
#: write the word jargon", "provide the title" never means "write the word title").
_ABSTRACT: Final = frozenset(
    """context information info details detail insights insight examples example explanation explanations
    definitions definition summary summaries points point color colour facts fact data content evidence
    reasoning analysis overview background rationale takeaways takeaway statements statement opinion opinions
    thoughts thought ideas idea feedback suggestions suggestion recommendations recommendation advice guidance
    aspects aspect things thing anything everything something nothing stuff jargon slang cliches cliche
    clichés cliché fluff filler fillers buzzwords buzzword repetition repetitions redundancy speculation
    speculations assumptions assumption generalizations generalization exaggeration exaggerations hyperbole
    tone language style wording terminology vocabulary words word sentences sentence structure format
    formatting length verbosity complexity emphasis nuance nuances perspective perspectives depth clarity
    quality accuracy specifics specificity elaboration commentary interpretation interpretations claims claim
    conclusions judgement judgment judgments judgements bias biases preamble introduction intro pleasantries
    apologies apology disclaimers disclaimer caveats caveat questions question answers answer response text
    output way manner approach tips tip steps step items item topic topics subject subjects issue issues
    problem problems solution solutions terms phrases criticism criticisms comments comment notes note symbol
    symbols
    title titles name names date dates time times author authors number numbers price prices amount amounts
    address addresses url urls link links location locations source sources quote quotes citation citations
    gratitude appreciation empathy sympathy enthusiasm respect interest concern understanding support care
    excitement urgency confidence humor humour personality emotion emotions warmth kindness politeness
    professionalism creativity curiosity""".split()  # noqa: SIM905
)
#: Verbs that open an instruction: a bold label starting with one is a step, not a section title.
_IMPERATIVES: Final = frozenset(
    {"begin", "start", "end", "finish", "include", "add", "write", "use", "provide", "list", "summarize",
     "summarise", "explain", "describe", "give", "make", "keep", "avoid", "mention", "highlight", "state",
     "identify", "follow", "conclude", "open", "close", "introduce", "focus", "ensure", "note", "remember",
     "define", "compare", "discuss", "analyze", "analyse", "outline", "present", "try", "tell"}
)  # fmt: skip
_PRONOUNS: Final = frozenset({"i", "you", "we", "they", "he", "she", "it", "one", "someone", "people"})
_PARTICLES: Final = frozenset({"up", "out", "off", "down", "away", "back", "over", "around", "through"})
#: Tone words the sentence offers as answers to choose from: "classify it as positive, negative or neutral",
#: "label each review positive or negative".
_LABELS: Final = re.compile(
    r"\b(?:classif\w*|categori[sz]\w*|label\w*)\b"
    r"|\b(?:positive|negative|neutral)\b\s*(?:,|/|\bor\b)\s*(?:\w+\s*(?:,|/)\s*)*(?:or\s+)?(?:positive|negative|neutral)\b",
    re.IGNORECASE,
)
#: An element the sentence asks the answer to be wrapped in: "in <answer></answer> tags", "(In <methods> tags.)".
_ASKED_TAG: Final = re.compile(
    r"(?:\b(?:in|inside|within|between|wrap\w*|enclos\w*|use|with)\b[^.<]{0,30}?)<([A-Za-z][\w-]{0,40})>"
    r"(?=(?:\s*</\1>)?[^.]{0,20}?\btags?\b)",
    re.IGNORECASE,
)
#: "Answer in lowercase", "write everything in all caps", "use uppercase letters only", "block capitals".
_LETTER_CASE: Final = re.compile(
    r"\b(?:in|use|using|all|be|be\s+entirely|be\s+all)\s+(?:all\s+)?(lower|upper)[\s-]?case\b"
    r"|\b(?:in|use|using)\s+(?:all\s+)?(caps)\b"
    r"|\b(?:all|block)\s+(capital)(?:s|\s+letters)\b"  # "ALL CAPITALS, because the board has no lowercase font"
)
#: Punctuation a sentence can ban by name ("do not use exclamation marks"): the name, and the marks it means.
_PUNCTUATION: Final = {
    r"\bexclamation (?:marks?|points?)\b": ("!",),
    r"\bquestion marks?\b": ("?",),
    r"\bsemi-?colons?\b": (";",),
    r"\bem[ -]?dash(?:es)?\b": ("—",),
    r"\bellips[ie]s\b": ("...", "…"),
    r"(?<!oxford )(?<!serial )\bcommas?\b": (",",),  # not "no Oxford comma", a style of list
    r"\b(?:forward\s+)?slash(?:es)?\b": ("/",),
    r"\bapostrophes?\b": ("'", "’"),
    # the marks themselves banned, not "never paraphrase inside quotation marks"
    r"\b(?:no|without|never\s+use|don't\s+use|do\s+not\s+use|avoid|nor)\s+(?:any\s+)?(?:surrounding\s+)?"
    r"(?:(?:quotation|quote)\s+marks?|quotes\b(?!\s+(?:from|of|by)\b))": ('"', "“", "”"),
    r"\bampersands?\b": ("&",),
    r"\bcurrency\s+(?:symbols?|signs?)\b": ("£", "$", "€"),  # "Amounts are plain numbers: no currency symbols"
}
#: A sentence about how numbers are written: its commas are thousands separators, not the response's commas
#: ("Amounts are plain numbers in pounds: no currency symbols, no commas", "write numbers without commas").
_ABOUT_NUMBERS: Final = re.compile(
    r"\b(?:numbers?|numerals?|amounts?|figures?|values?|prices?|sums?|totals?|digits|thousands?|integers?)\b", re.I
)
#: A ban on remarks about something rather than on the thing: "don't comment on formatting or trailing commas".
_REMARKS_ON: Final = re.compile(
    r"\b(?:comment(?:ing)?|remark(?:ing)?|nitpick(?:ing)?|flag(?:ging)?|complain(?:ing)?)\s+(?:on|about)\b", re.I
)
#: A term of code a sentence bans by writing it ("never use SELECT *", "do not use GOTO"): capitals, maybe a
#: symbol; not "ALL CAPS words", which names a letter case.
_CODE_TERM: Final = re.compile(
    r"\b(?:use|using|write|include|output|add)\s+([A-Z]{2,}(?:\s+[A-Z]{2,})*(?:\s*[*;])?)"
    r"(?![ \t]*[A-Z*;])(?!\s*(?:words?|letters?|text|case)\b)(?=[\s.,;:)]|$)"
)
#: A chat mention or tag a sentence bans by writing it after a verb of using it: "Never use @everyone or @here",
#: "don't add #ad" (each token the verb's list holds).
_MENTION_TOKEN: Final = re.compile(
    r"\b(?:use|using|write|include|add|ping|tag|type|post|put)\s+"
    r"((?<![\w@#])[@#][A-Za-z][\w-]*(?:\s*(?:,|\bor\b|\band\b|/)\s*[@#][A-Za-z][\w-]*)*)"
)
#: A parenthesis that gives what to write instead of what a sentence bans: "(write AE, OE, UE)".
_INSTEAD: Final = re.compile(r"\(\s*(?:write|use|say|instead)\b[^()]*\)", re.IGNORECASE)
#: A parenthesis, which glosses what stands before it.
_PARENTHESIS: Final = re.compile(r"\([^()]*\)")
#: A section named by a quoted title: 'a "## Steps" section', 'a heading called "Next steps"'.
_TITLED_SECTION: Final = re.compile(
    r"[\"“]#*\s*([^\"”\n]{1,40}?)[\"”]\s+(?:section|heading|header)\b"
    r"|\b(?:section|heading|header)\s+(?:called|named|titled|entitled)\s+[\"“]#*\s*([^\"”\n]{1,40}?)[\"”]"
    r"|\b(?:section|heading|header)\s+(?:called|named|titled|entitled)\s+['‘]#*\s*([^'’\n]{1,40}?)['’](?!\w)",
    re.IGNORECASE,
)
#: Section titles listed unmarked on the sentence's own line after its colon, one from the next by a slash ("Three
#: sections with these exact headings, in this order: What went well / To work on / Next lesson.").
_SLASHED_TITLES: Final = re.compile(
    r"\b(?:sections?|headings?|headers?)\b[^:\n]{0,60}:\s*((?:[A-Z][^/\n.;:]{0,40}?\s+/\s+)+[A-Z][^/\n.;:]{0,40}?)\s*(?:[.;]|$)"
)


def _slashed_titles(text: str) -> list[str]:
    """The titles of :data:`_SLASHED_TITLES`, in order."""
    listed = _SLASHED_TITLES.search(text)
    return [title.strip() for title in listed.group(1).split("/")] if listed else []


#: JSON keys listed without quotes: "with the keys title, summary and tags", "fields: id, name", "the keys answer,
#: clue and enumeration (all strings)".
_LISTED_KEYS: Final = re.compile(
    r"\b(?:keys?|fields?|properties|attributes)\s*:?\s+((?:[a-z_][\w-]*\s*,\s*(?:and\s+)?)*[a-z_][\w-]*"
    r"(?:\s*,?\s+and\s+[a-z_][\w-]*)?)\s*(?:[.;:()]|$)",
)


def _split_keys(listed: str) -> list[str]:
    """The keys of a :data:`_LISTED_KEYS` match's list: "title, summary and tags"."""
    return [key for key in re.split(r"\s*,\s*(?:and\s+)?|\s+and\s+", listed) if key]


def _json_key_named(prompt: str, word: str) -> str | None:
    """The key of the response's JSON that "each <word>" names: the key itself ('"clue"', "with the keys answer,
    clue and enumeration") or the plural key of a list ('"clues"'); None when the prompt asks for no JSON or
    names no such key."""
    if not re.search(r"\bjson\b", prompt, re.IGNORECASE):
        return None
    listed = {key.lower() for found in _LISTED_KEYS.finditer(prompt) for key in _split_keys(found.group(1))}
    for key in (word, f"{word}s"):
        if key in listed or re.search(rf"[\"“'`]{re.escape(key)}[\"”'`]", prompt, re.IGNORECASE):
            return key
    return None


#: A sentence that says who the model is ("You are an evaluator for {topic}", "Assistant is designed to assist with
#: in-depth questions"): its words describe the model, not the response.
_ROLE = re.compile(r"^(?:act as|you are|you're|as an?|(?:the )?assistant is)\b", re.IGNORECASE)
_DETERMINERS = r"(?:only\s+)?(?:an?|the|any|all|some|no)\s+|only\s+"
_ANAPHORIC = re.compile(
    r"^(?:their|its|his|her|our|my|your|this|that|these|those|such|them|it|they|him|one|itself|themselves|herself"
    r"|himself|yourself)\b"
)
_EXAMPLE_INTRO = re.compile(r"\bexamples?\b[^.\n]{0,40}:\s*$|^\s*(?:example|sample)\b.*:\s*$", re.IGNORECASE)
_STRUCTURE_LABEL = re.compile(r"^\s*\*\*([^*\n]{2,60}?):?\*\*:?\s*$")
_SENTENCE_LABEL = re.compile(r"^\s*([A-Z][A-Za-z\- ]{1,30}):\s+\S")
_MD_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.+?)\s*$", re.MULTILINE)

#: Qualities read as a length: said of one part ("a short explanation"), they size it rather than describe the
#: writing, and the counts read its sizes.
_LENGTH_QUALITIES: Final = frozenset({"concise", "detailed"})
#: The prompt's author thanking the model ("Thanks!", "Thank you so much.", "Thanks in advance!"): no gratitude asked
#: of the response, unlike "thank the customer for waiting".
_THANKS_TO_THE_MODEL: Final = re.compile(
    r"\b(?:many\s+)?(?:thanks|thank\s+you|thx|ty)(?:\s+(?:so\s+much|very\s+much|a\s+lot|a\s+ton|in\s+advance|again))?"
    r"(?:\s*[!.]+|\s*$)",
    re.IGNORECASE,
)
#: Qualities that are things the response does, which a sentence may refuse as well as ask for.
_SPEECH_ACTS: Final = frozenset({"gratitude", "apology"})
_REFUSED_ACT: Final = re.compile(
    r"\b(?:don't|do\s+not|never|no\s+need\s+to|avoid|without|not|stop)\s+(?:\w+\s+){0,2}?"
    r"(?:thank|apologi|say\s+sorry|over-?apologi)|\b(?:no|excessive|repeated)\s+(?:apolog|thanks)",
    re.IGNORECASE,
)
_QUALITIES: Final[tuple[tuple[str, str, tuple[tuple[str, str, dict[str, Any] | None], ...]], ...]] = (
    (
        # not "a brief introduction", "a short title": the length of one part, not the response's style
        r"\b(?:concise|concisely|brief|briefly|brevity|succinct|short form|shorter|to the point|short)\b"
        r"(?!\s+(?:introduction|intro|conclusion|closing|title|heading|headline|note|greeting|sign-off|"
        r"subject line|tagline|name|pause|break)s?\b)",
        "concise",
        (
            ("checks.mean_sentence_words(response) <= 25", "Sentences average 25 words or fewer.", None),
        ),
    ),
    (
        # about the wording, not "a clear picture of" or "clearly articulate the thesis" (what, not how it reads)
        r"\b(?:readab\w*|easy to (?:read|understand|follow)|easily (?:read|understood)|digestible|layman'?s? terms|"
        # "plain prose" is a form (no list), not a reading level
        r"(?:clear|simple|plain|accessible|everyday|straightforward)\s+(?:language|words|wording|terms|english)|"
        r"(?:clear|simple|accessible|everyday|straightforward)\s+prose|"
        r"(?:write|written|explain(?:ed)?|speak)\s+(?:clearly|simply|plainly))\b|"
        r"\b(?:avoid(?:ing)?|no|without|free of|free from|minimi[sz]e|(?:do not|don't|never) use)\s+"
        r"(?:\w+\s+){0,2}?jargon\b",
        "readable",
        (
            ("checks.reading_ease(response) >= 30", "Flesch reading ease >= 30 (not academic-paper dense).", None),
        ),
    ),
    (
        # "a warm tone", not "a warm-up" (an exercise)
        # not "polite" nor "empathetic": a polite apology for a delay or an empathetic reply to a payout hold reads
        # negative on balance; over 260 other authors' prompts those 8 checks failed most good outputs of 4 and
        # caught no bad one
        r"\b(?:friendly|warm(?![-\s]up\b)|enthusiastic|encouraging|upbeat|gratitude|grateful"
        # "a positive amount" is a sign, not a tone
        r"|positive(?!\s+(?:amounts?|numbers?|values?|integers?|balances?|sign|figures?|results?|cases?|class\w*|labels?"
        r"|things?|aspects?|points?|examples?)))\b",
        "positive_tone",
        # "friendly", "warm": nothing negative on balance. A friendly reply that declines a claim or a refund uses
        # negative words, and "positive" (>= 0.05) failed most good outputs of 18 of 47 other authors' prompts
        # that asked for a warm tone, where >= 0 failed those of 7 and caught a bad output on 9 (8 before)
        (("checks.sentiment(response) >= 0", "Warm tone: mean VADER compound score >= 0, not negative on balance.",
          None),),
    ),
    (
        # "professional help" and "professional advice" are things to recommend, not a tone
        r"\b(?:professional(?!\s+(?:help|advice|services?|assistance|support|opinion|guidance|counsel\w*|care|"
        r"development|experience|background))|neutral|non-bias\w*|unbiased|journalistic|formal)\b"
        # "be objective", not "your objective is" (a goal)
        r"|(?<!your )(?<!our )(?<!the )(?<!my )(?<!main )(?<!primary )\bobjective\b(?!\s+(?:is|was|of|for)\b)",
        "neutral_tone",
        (("abs(checks.sentiment(response)) <= 0.5", "Measured tone: |mean VADER compound| <= 0.5.", None),),
    ),
    (
        r"\b(?:detailed|comprehensive|thorough|in-depth|in depth|rich)\b",
        "detailed",
        (
            ("checks.count(response, 'words') >= 150", "At least 150 words (one reading of 'detailed').",
             {"family": "count", "unit": "words", "min": 150, "max": None}),
            ("checks.count(response, 'words') >= 300", "At least 300 words (a stricter reading of 'detailed').",
             {"family": "count", "unit": "words", "min": 300, "max": None}),
        ),
    ),
    (
        r"\b(?:gratitude|grateful|thank)\w*",
        "gratitude",
        (("checks.contains_any(response, ['thank', 'thanks', 'grateful', 'appreciate', 'gratitude'])",
          "Expresses thanks (a gratitude word appears).", None),),
    ),
    (
        r"\b(?:apologi[sz]e|apologi[sz]ing|say\s+sorry)\b",
        "apology",
        (("checks.contains_any(response, ['sorry', 'apologise', 'apologize', 'apologies', 'apology', 'regret'])",
          "Apologises (an apology word appears).", None),),
    ),
    (
        r"\bpersonal(?:ized|ised)?\b(?=\s*(?:[.,;:!?)]|$|\s(?:and|or|but|tone|touch|note|style)\b))",
        "personal",
        (("checks.contains_any(response, ['you', 'your'])", "Addresses the reader directly (you/your).", None),),
    ),
)  # fmt: skip


#: A count as a prompt writes it: digits (thousands grouped by commas, never a comma that ends a clause: "if <= 3,
#: no ACTION line"), a number word, or a placeholder (``{n}``, ``{{n}}``, ``[n]``).
_NUMBER: Final = (
    r"\d{1,3}(?:,\d{3})+(?!\d)|\d+|" + "|".join(sorted(map(re.escape, _NUMBER_WORDS), key=len, reverse=True))
    + r"|\{\{?\s*[A-Za-z_]\w*\s*\}?\}|\[[A-Za-z_]\w*\]"
)  # fmt: skip


#: Suffixes an input's name and the prompt's words for it use for the same thing.
_SAME_SUFFIX: Final = (("number", "id"), ("no", "id"), ("id", "number"), ("reference", "ref"), ("ref", "reference"))


class _Vocabulary:
    """Input fields and how the prompt refers to them (``{topic}``, ``{{topic}}`` or ``[topic]``)."""

    def __init__(self, context: PromptContext) -> None:
        self.inputs = tuple(context.inputs)
        self.number = _NUMBER
        self.prompt = context.text

    def input_named(self, phrase: str) -> str | None:
        """The input a phrase is the prompt's name for: "the target keyword [keyword]", "the customer's name,
        {customer_name}" (a bracketed name counts though it is no placeholder: SPADE's prompts write inputs so)."""
        token = r"\{\{?\s*([A-Za-z_]\w*)\s*\}?\}|\[([A-Za-z_]\w*)\]"
        match = re.search(rf"\b{re.escape(phrase)}\s*[,:]?\s*(?:{token})", self.prompt, re.IGNORECASE)
        if match:
            return match.group(1) or match.group(2)
        # "the product page link" of "Product page: {link}": the label, and the word for the form its value takes
        linked = re.match(
            r"(?:(?:the|a|an|your|our|their|its)\s+)?(?P<label>.+?)\s+(?:link|url|web\s+address|hyperlink)$",
            phrase.strip(),
            re.IGNORECASE,
        )
        if linked is not None and (field := self.input_named(linked.group("label"))) is not None:
            return field
        counted = re.match(r"(?:the\s+)?(?:number|count|total)\s+of\s+(\S.*)$", phrase.strip(), re.IGNORECASE)
        if counted:  # "the number of customers affected" of "Customers affected: {customers_affected}": its value
            return self.input_named(counted.group(1))
        # "the centre name" of {centre_name}: the input's own name, written as words
        words = re.sub(r"^(?:the|a|an|your|our|their|its)\s+", "", phrase.strip().lower()).replace("'s ", " ")
        words = words.replace("’s ", " ")  # "the coordinator's name" of {coordinator_name}
        # "their role in the boat", "the cause they're rowing for": the noun before what qualifies it
        words = re.split(
            r"\s+(?:in|of|for|on|at|to|from|that|which|who|they|they're|you|we|exactly|verbatim|precisely"
            r"|word for word)\b",
            words,
        )[0].strip()
        name = re.sub(r"[\s-]+", "_", words)
        # "the order number" of {order_id}, "the booking ID" of {booking_number}: one thing, two names
        for candidate in dict.fromkeys([name, *(re.sub(rf"_{a}$", f"_{b}", name) for a, b in _SAME_SUFFIX)]):
            if candidate in self.inputs:
                return candidate
            # "the date" of {service_date}: the one input whose name ends with those words
            ending = [field for field in self.inputs if field.endswith(f"_{candidate}")] if candidate else []
            if len(ending) == 1:
                return ending[0]
        return None

    def is_document(self, field: str) -> bool:
        """Whether the input's placeholder stands alone on its line ("Job record:" over "{job_record}"): a text
        the model reads from, not a value to repeat."""
        return re.search(rf"^[ \t]*\{{{re.escape(field)}\}}[ \t]*$", self.prompt, re.MULTILINE) is not None

    def field_of(self, token: str) -> str | None:
        name = token.strip("{}[] ")
        return name if name in self.inputs else None

    def fields_in(self, text: str) -> list[str]:
        found = re.findall(r"\{\{?\s*([A-Za-z_]\w*)\s*\}?\}|\[([A-Za-z_]\w*)\]", text)
        names = [a or b for a, b in found]
        return list(dict.fromkeys(name for name in names if name in self.inputs))

    def bound(self, token: str) -> int | str | None:
        """An int, a placeholder ``{name}`` whose value is read per example, or None."""
        token = token.strip().lower()
        if token in _NUMBER_WORDS:
            return _NUMBER_WORDS[token]
        if re.fullmatch(r"\d{1,3}(?:,\d{3})+|\d+", token):
            return int(token.replace(",", ""))
        name = self.field_of(token)
        return "{" + name + "}" if name else None


class OfflineSynthesizer:
    """Parses each instruction for checkable requirements; see the module docstring."""

    name = NAME

    def synthesize(self, instructions: Sequence[Instruction], context: PromptContext) -> list[Candidate]:
        """Candidates for the newest version's instructions, then for earlier versions' removed and reworded
        ones (``context.earlier``). Equivalent checks are one candidate that lists every sentence it serves; the
        first sentence (the newest version's, where the check was introduced) names it."""
        vocabulary = _Vocabulary(context)
        examples = example_blocks(context.text)
        out: list[Candidate] = []
        taken: dict[str, int] = {}
        position: dict[str, int] = {}
        current = {" ".join(i.text.split()) for i in instructions}
        earlier = [i for i in context.earlier if " ".join(i.text.split()) not in current]
        for instruction in [*instructions, *earlier]:
            for draft in self.instruction_drafts(instruction, context, vocabulary, examples):
                key = _equivalence_key(draft.expression)
                if key in position:  # the same check from another sentence: one candidate serving both
                    index = position[key]
                    out[index] = _serves(out[index], instruction)
                    continue
                position[key] = len(out)
                out.append(_candidate(draft, instruction, taken))
        return _without_superseded(out)

    def instruction_drafts(
        self,
        instruction: Instruction,
        context: PromptContext,
        vocabulary: _Vocabulary | None = None,
        examples: list[tuple[int, int]] | None = None,
    ) -> list[_Draft]:
        """What this synthesizer writes for one instruction (none for a line inside an example or code block)."""
        vocabulary = _Vocabulary(context) if vocabulary is None else vocabulary
        examples = example_blocks(context.text) if examples is None else examples
        if instruction.removed_in is None and (
            _inside(instruction, examples) or instruction.kind == "code" or _is_json_fragment(instruction.text)
        ):
            return []
        if instruction.removed_in is not None and re.match(r"\s*(?:```|~~~)", instruction.text):
            return []  # an old example or code block, not an instruction
        guard = _value_guard(instruction, context.text, vocabulary)
        drafts = list(self._drafts(instruction, context, vocabulary, examples))
        keys = _schema_key_lines(instruction.text)
        if len(keys) >= 2 and guard is None:  # a schema's key lines read as one unit: each its own rule, so "max 25
            # words" of "reason" is no limit on "category"; one model question for the whole
            drafts = [
                *(
                    draft
                    for line in keys
                    for draft in self._drafts(instruction, context, vocabulary, examples, rule=line)
                    if not draft.asks_llm
                ),
                *(draft for draft in drafts if draft.asks_llm),
            ]
        if guard is not None:  # "- X/Twitter: ... 280 characters or less" under "Match the platform:": the
            # rule's checks for that value alone, and a model's question about the whole item as before
            field, case, rule_text, before = guard
            # a case's 'write "UPDATES TO FOLLOW"' asks for those words where the case holds
            rule_text = re.sub(r"^(?:write|say|put|output|reply\s+with)\s+(?=[\"“])", "include ", rule_text, flags=re.I)
            rule = self._drafts(instruction, context, vocabulary, examples, rule=rule_text)
            guarded = [_guarded(draft, field, case) for draft in rule if not draft.asks_llm]
            # "2. First paragraph: state the amount. If the date is "none", don't mention ...": the first
            # sentence's checks for every example
            unguarded = self._drafts(instruction, context, vocabulary, examples, rule=before) if before else ()
            plain = [draft for draft in unguarded if not draft.asks_llm]
            drafts = [*plain, *guarded, *(draft for draft in drafts if draft.asks_llm)] if guarded else drafts
        before_condition = _before_a_condition(instruction.text)
        if before_condition is not None and guard is None:
            # "Never offer a refund or credit. If they ask for money back, ...": the sentences before the condition
            # hold for every response, though the item as a whole reads as conditional
            known = {draft.expression for draft in drafts}
            drafts += [
                draft
                for draft in self._drafts(instruction, context, vocabulary, examples, rule=before_condition)
                if not draft.asks_llm and draft.expression not in known
            ]
        if instruction.removed_in is None and _in_another_language(_clean(instruction.text)):
            drafts = [*_foreign_drafts(_clean(instruction.text), vocabulary), *drafts]
        if not drafts and instruction.removed_in is None and _written_in_another_language(instruction):
            drafts = [_ask_draft(_clean(instruction.text), WORKFLOW_DESCRIPTION)]  # a model reads what this cannot
        return drafts

    def _drafts(
        self,
        instruction: Instruction,
        context: PromptContext,
        vocabulary: _Vocabulary,
        examples: list[tuple[int, int]],
        rule: str | None = None,
    ) -> Iterator[_Draft]:
        """What the instruction asks, read from ``rule`` where given (the instruction without the input's value
        it is for) and from the instruction's own text otherwise."""
        text = rule if rule is not None else _clean(instruction.text)
        if rule is None:
            yield from _input_rule_drafts(text, vocabulary)
        if not text or _is_data_line(text, vocabulary):
            return
        if _under_a_ban(context.text, instruction.text) and not _EXCLUDE_CUE.search(text):
            text = f"Do not {text[0].lower()}{text[1:]}"  # "Don't:" over "- Use emoji.": "Do not use emoji."
        text = _heading_item(context.text, instruction.text) or text
        text = _MARKDOWN_ELEMENT.sub("", text)  # "No markdown headings or bold": those, not every mark of markdown
        mapped = _CASE_TO_OUTCOME.match(text)
        # "Messages that are only thanks -> other, low": the case is the input's, not the response's (but "Replace US
        # names (heavy cream → double cream)" is a swap of wordings)
        if mapped and not _SWAP_VERB.search(mapped.group("case")):
            text = mapped.group("outcome")
        labelled = (
            _paragraph_label(context.text, instruction.text)
            or _section_title_over(context.text, instruction.text)
            or _titled_list_over(context.text, instruction.text)
        )
        if labelled and not text.lower().startswith(labelled.lower()):
            text = f"{labelled}: {text}"  # "X: no more than 280 characters. Exactly two hashtags.": both the X post's
        parent = _parent_item(context.text, instruction.text) or _list_intro(context.text, instruction.text)
        if (
            parent
            and re.match(r"(?:for\s+)?(?:each|every)\s+\w+\s*:?$", parent, re.IGNORECASE)
            and not _LEADING_EACH.match(text)
        ):
            text = f"{parent.rstrip(':')}: {text}"  # "- Each item" over "  - one line, 12 words max": per item
        conditional = bool(_CONDITIONAL.search(text))
        categories = set(instruction.categories)
        if instruction.kind == "heading" or _STRUCTURE_LABEL.match(instruction.text):
            yield from _structure_label(instruction.text)
            if _EXAMPLE_INTRO.search(text):
                yield from _example_drafts(context.text, instruction, examples)
            return
        if _EXAMPLE_INTRO.search(text):
            yield from _example_drafts(context.text, instruction, examples)
        label = _SENTENCE_LABEL.match(instruction.text)
        if (  # not "Warranty: only include this line if the register shows one", nor an input's value
            label
            and rule is None
            and not conditional
            and not re.search(r"\b(?:if|unless|when)\b", text, re.IGNORECASE)
            and _is_section_label(label.group(1))
            and _names_itself(label.group(1), instruction.text)
            and not PLACEHOLDER_PATTERN.match(instruction.text, label.end() - 1)  # "Vehicle: {vehicle}": the input's
        ):
            yield _heading_draft(label.group(1), PRESENTATION_FORMAT)
        found_specific = False
        used_as_bound: set[str] = set()
        counted_units: set[str] = set()
        if not conditional:
            for draft in _counts(text, vocabulary, context.text):
                found_specific = True
                assert draft.check is not None
                counted_units.add(str(draft.check["unit"]))
                used_as_bound |= {
                    str(v).strip("{}") for v in (draft.check["min"], draft.check["max"]) if isinstance(v, str)
                }
                yield draft
            formats = [
                *_formats(text, vocabulary, instruction.text),
                *_numbered_line_drafts(text, context.text),
                *_part_layout_drafts(text),
                *_value_set(text, context.text, instruction.text),
                *_label_only(text, context.text),
                *_date_form_drafts(instruction.text, context.text),
            ]
            keys = _keys_listed_after(context.text, instruction.text) or _schema_keys_after(
                context.text, instruction.text
            )
            formats += _template_value_drafts(_template_below(context.text, instruction.text))
            only = _ONLY_THESE_KEYS.search(text) is not None
            if only and not keys and (template := _template_keys(context.text)):
                formats.append(library.keys_within_draft(list(template)))  # "JSON only, no extra keys" of its template
            if keys:  # "Return a JSON object with exactly these keys:" over '- "dish": ...' items
                formats = [
                    json_draft(keys, only=only) if draft.check and draft.check.get("family") == "json" else draft
                    for draft in formats
                ]
            whole = list(_copied_whole(text, vocabulary))
            quotes = [] if whole else list(_quoted_from(text, vocabulary))  # the whole value says more than a quote
            lines = instruction.text if rule is None else text  # a schema's key lines, before spacing was joined
            drawn = [*_drawn_from_input(lines, context.text, vocabulary), *_copied_label(lines, vocabulary)]
            part_label = _PART_LABEL.match(text)
            edges_in = (
                part_label.group(1) if part_label and _has_section(context.text, part_label.group(1).lower()) else None
            )
            for draft in [*formats, *_copied(text, context.text, vocabulary), *whole, *quotes, *drawn]:
                if draft.check and draft.check.get("family") == "count" and draft.check["unit"] in counted_units:
                    continue  # "a list of exactly three bullet points": the count says more than "uses bullets"
                found_specific = True
                yield _at_the_part_s_edge(draft, edges_in) if edges_in else draft
            negated = _negation(text) is not None
            # a negation judged conditional bans nothing, and its verb ("does not mention") asks for nothing
            schema_values = _SCHEMA_ONE_OF.match(text) or _SCHEMA_QUOTED_VALUES.match(text)
            # a schema line's quoted words are its key's values ('"confidence": "high" or "low"; use "low" when'),
            # of which the response holds one, not each
            if negated or not (_EXCLUDE_CUE.search(text) or schema_values):
                # '- We have NOT made a decision. Never say ... Avoid "unfortunately".': each later sentence's
                # own ban as well as the first one's
                bans = [text, *(later.text for later in split_sentences(text)[1:] if _negation(later.text))]
                phrased: set[str] = set()
                for ban in bans if negated else [text]:
                    for draft in _phrases(ban, vocabulary, exclude=negated):
                        if draft.check and draft.check.get("field") in used_as_bound:
                            continue  # "stay within the word limit": the limit's value bounds a count, no words
                        if draft.expression not in phrased:
                            phrased.add(draft.expression)
                            found_specific = True
                            yield draft
            replaced = _reworded(text)[1]
            if replaced:  # 'say "stitches", not "sutures"', "(heavy cream → double cream)": the replaced wordings
                found_specific = True
                yield phrases_draft(replaced, exclude=True)
            if not negated:  # "invite them to write to {contact_email}": the input's value itself
                for field in _placeholders_asked_for(text, vocabulary):
                    found_specific = True
                    yield mentions_draft(field)
        role = _ROLE.match(text) is not None
        languages = _language_fields(instruction.text, vocabulary)
        for field in languages:
            yield language_draft(field=field)
        named_input = _language_input(text, vocabulary)
        if named_input is not None and not languages:  # "reply in the donor's preferred language" of "Donor's
            languages = [named_input]  # preferred language: {donor_language}"
            yield language_draft(field=named_input)
        same = _same_language_field(text, vocabulary)
        if same is not None and not languages:
            languages = [same]
            yield same_language_draft(same)
        if not _EXCLUDE_CUE.search(text):
            for field in vocabulary.fields_in(instruction.text):
                if role or field in used_as_bound or field in languages:
                    continue  # "You are an evaluator for {topic}": who the model is, not what it writes
                if not _asks_to_mention(instruction.text, field) or _bans_naming(context.text, field):
                    continue  # "a haiku about {season}. Avoid the word "{season}" itself.": about, not naming it
                yield mentions_draft(field)
        qualitative = False
        asked_tones: set[str] = set()
        part = _part_spoken_of(text.lower(), context.text)
        if part is not None and not _has_section(context.text, part):
            part = None  # "the tone should be warm": no part of the output is called "tone"
        unquoted = _QUOTED.sub(" ", text)  # "the keyword 'eco-friendly'" asks for no friendly tone
        unquoted = _THANKS_TO_THE_MODEL.sub(" ", unquoted)  # "Just the checklist please. Thanks!!" asks no thanks
        labels = _LABELS.search(unquoted) is not None
        for pattern, slug, measures in _QUALITIES:
            if labels and slug in ("positive_tone", "neutral_tone"):
                continue  # "classify the sentiment as positive, negative, or neutral": answers, not a tone
            if slug == "neutral_tone" and "positive_tone" in asked_tones:
                continue  # "positive and professional": warm in a professional register, not neutral
            if slug in _SPEECH_ACTS and (
                _REFUSED_ACT.search(unquoted) or re.search(r"\b(?:if|unless)\b", unquoted, re.I)
            ):
                continue  # "never apologise for the policy", "only apologise for a mistake if ...": not always asked
            if re.search(pattern, unquoted, re.IGNORECASE) and not conditional and not role:
                qualitative = True
                asked_tones.add(slug)
                if part is not None and slug in _LENGTH_QUALITIES:
                    continue  # "Justification: <short explanation>": the size of one part, not the writing's style
                for expression, description, check in measures:
                    short = re.split(r"[(:]", description)[0]
                    name = slug if len(measures) == 1 else f"{slug}_{_slug(short, 28)}"
                    if part is not None:  # '"summary": plain English, max 20 words': the summary's wording
                        target = f"checks.present_section(response, {library.literal(part)})"
                        expression = expression.replace("(response", f"({target}")
                        description = f"In the {part} part: {description[0].lower()}{description[1:]}"
                        name = f"{name}_in_{_slug(part, 20)}"
                        check = {**check, "section": part} if check else None
                    yield _Draft(name, QUALITATIVE_ASSESSMENT, description, expression, check)
        for family, (asked_for, cued_draft) in library.CUED.items():
            if family in _OWED_BY_SOME and _LEADING_CONDITION.match(text):
                continue  # "If the review mentions an injury, ... ask them to contact us": those replies only (but
                # "encourage readers to contact us if they have questions" asks every reply to invite them)
            if asked_for(text) and not role:
                last = _last_line_label(context.text) if family == "only_list" else None
                if last is not None:  # "no intro or outro" and elsewhere "last line: 'BLOCKERS: ...'"
                    yield library.only_list_draft(last)
                else:
                    yield cued_draft(text, tuple(context.inputs))
        named = _named_language(text)
        if named is not None:
            yield language_draft(code=named[1], name=named[0])
        asks = categories & {WORKFLOW_DESCRIPTION, QUALITATIVE_ASSESSMENT, INCLUSION, EXCLUSION}
        if _only_a_role(text, role):
            return
        if qualitative or conditional or (asks and not found_specific) or (asks and len(text.split()) > 8):
            yield _ask_draft(text, _ask_category(categories, qualitative))


#: Words after which a placeholder is something the response should hold: "mention {product_name}", "using the
#: {context}", "a tweet about {topic}". A placeholder the sentence only frames the task with ("a product description
#: for {product_name}", "the postmortem for {incident_id}", "summarize {doc}", "explain this {flavor} regex", "a
#: reply to {message}") is not asked for: across two hundred other authors' prompts a value after "for" was absent
#: from good outputs as often as present (14 of 33 such checks failed most good outputs, 1 caught a bad one).
_MENTION_CUE = re.compile(
    r"\b(?:mention\w*|includ\w*|contain\w*|us(?:e|es|ing)|utili[sz]\w*|refer(?:s|ring|ence|ences)?|cit(?:e|es|ing)|"
    r"incorporat\w*|about|on the (?:topic|subject) of|featur(?:e|es|ing)|highlight\w*|nam(?:e|es|ing)|"
    # "say we'll update them by {next_update_time}", "quote the reference {case_reference}": the value, said
    r"regarding|concerning|promot\w*|showcas\w*|say(?:s|ing)?|stat(?:e|es|ing)|tell(?:s|ing)?|quot(?:e|es|ing))\b",
    re.IGNORECASE,
)


#: Inputs that say whom or how to write, not what to write about: "using a {tone} tone", "written in the {persona}'s
#: voice" need not name the tone or the persona, unless the sentence asks for the value itself ("mention {audience}").
_WHO_OR_HOW = re.compile(r"audience|reader|user|customer|persona|role|level|age|tone|style|lang|locale|format", re.I)


#: Cues that ask for the value itself, whatever it names ("mention the {audience}").
_EXPLICIT_MENTION: Final = re.compile(r"mention|includ|contain|refer|nam|cit", re.IGNORECASE)


def _bans_naming(prompt: str, field: str) -> bool:
    """Whether the prompt bans writing the input's value ("avoid the word "{season}"", "never mention {brand}")."""
    token = rf"[\"“'‘]?(?:\{{\{{?\s*{re.escape(field)}\s*\}}?\}}|\[{re.escape(field)}\])"
    verbs = r"use|using|mention|mentioning|say|write|the|any|word|words|name|naming"
    ban = rf"\b(?:avoid|don't|do\s+not|never|without|no)\b(?:\s+(?:{verbs}))*\s+"
    return re.search(ban + token, prompt, re.IGNORECASE) is not None


#: A sentence that introduces the inputs rather than asking for something: "Here is the transcript of a voice note
#: from a visit at {site_name}:", "Below are the reviews for {product}", "You will be given {document}".
_DATA_INTRO: Final = re.compile(
    r"^\s*(?:here\s+(?:is|are)|below\s+(?:is|are)|the\s+following\s+(?:is|are)|attached\s+(?:is|are)|"
    r"you\s+will\s+(?:be\s+given|receive|get)|you\s+are\s+given)\b",
    re.IGNORECASE,
)


def _asks_to_mention(text: str, field: str) -> bool:
    """Whether a cue of :data:`_MENTION_CUE` governs the placeholder: at most six words before it, in its clause
    (unless the input names whom or how to write for and the cue does not ask for the value itself). A sentence
    that introduces the inputs asks for none of them."""
    if _DATA_INTRO.match(text):
        return False
    for group in re.finditer(r"\(([^()]*)\)", text):
        inside = group.group(1)
        if len(re.findall(r"\{[^{}]+\}|\[\w+\]", inside)) >= 2 and re.search(
            rf"\{{\{{?\s*{re.escape(field)}\b", inside
        ):
            return False  # "the film {title} from {director} ({country}, {runtime} minutes)": its details, not asks
    for match in re.finditer(rf"\{{\{{?\s*{re.escape(field)}\s*\}}?\}}|\[{re.escape(field)}\]", text):
        if re.match(rf"\s+(?:[a-z\-]+\s+)?(?:{_UNIT_ALTERNATION})\b", text[match.end() :].lower()):
            continue  # "about {n} words": a quantity, not a subject
        # "Include the customer's name, {customer_name}, ...": an appositive placeholder belongs to its clause
        before = _CLAUSE_BREAK.split(text[: match.start()].rstrip(" ,:(\u2014-"))[-1]
        words = " ".join(before.split()[-6:])
        cue = _MENTION_CUE.search(words)
        if cue and cue.group().lower().startswith("tell") and not re.search(r"\bthat\b", words[cue.end() :]):
            continue  # "telling residents on {street_name} that ...": whom it tells, not what it says
        if cue and (not _WHO_OR_HOW.search(field) or _EXPLICIT_MENTION.match(cue.group())):
            return True  # "use the {tone} tone" says how to write, not what the text says
    return False


_LANGUAGE_FIELD: Final = re.compile(r"lang|locale", re.IGNORECASE)


def _language_fields(text: str, vocabulary: _Vocabulary) -> list[str]:
    """Placeholders that name the language to write in: "in {language}", "translate into {target_lang}", "in
    the {locale} language"; a placeholder named like a language (``lang``, ``language``, ``locale``) after
    "in", "into" or "to" counts, and so does any placeholder followed by the word "language"."""
    found: list[str] = []
    fields = vocabulary.fields_in(text)
    if not fields or (not any(_LANGUAGE_FIELD.search(f) for f in fields) and "language" not in text.lower()):
        return found  # no placeholder named like a language, and no "language" after one: nothing to look for
    for field in fields:
        token = rf"(?:\{{\{{?\s*{re.escape(field)}\s*\}}?\}}|\[{re.escape(field)}\])"
        named = _LANGUAGE_FIELD.search(field) and re.search(
            rf"\b(?:in|into|to)\s+(?:the\s+)?{token}", text, re.IGNORECASE
        )
        if named or re.search(rf"\b(?:in|into)\s+(?:the\s+)?{token}\s+language\b", text, re.IGNORECASE):
            found.append(field)
    return found


def _language_input(text: str, vocabulary: _Vocabulary) -> str | None:
    """The input a sentence names as the language to write in by the prompt's own words for it: "always reply in
    the donor's preferred language" where the prompt gives "Donor's preferred language: {donor_language}"."""
    for match in re.finditer(r"\b(?:in|into)\s+(?:the\s+)?((?:[\w'’-]+\s+){0,3}?language)\b", text, re.IGNORECASE):
        field = vocabulary.input_named(match.group(1))
        if field is not None:
            return field
    return None


#: "Reply in the same language as the question", "answer in the language of the user's message".
_SAME_LANGUAGE = re.compile(
    r"\b(?:in|use)\s+the\s+(?:same\s+language\s+(?:as|of|that)?|language\s+(?:of|used\s+in))\s*(?:the\s+)?"
    r"(?:user['’]?s?\s+|customer['’]?s?\s+)?(?:\{\{?\s*|\[)?([a-z_]+)"
    # "in the language the customer wrote in", "in whatever language the guest used"
    r"|\b(?:in|use)\s+(?:the\s+(?:same\s+)?|whatever\s+|whichever\s+)language\s+(?:that\s+|which\s+)?(?:the\s+)?"
    r"(user|customer|client|sender|guest|reader|caller|patient|member|they)\s+(?:wrote|writes?|used|uses?)\b"
    # "in the customer's language", "in their own language"
    r"|\bin\s+(?:the\s+)?(user|customer|client|sender|guest|reader|caller|patient|member|their)(?:['’]s|['’])?\s+"
    r"(?:own\s+)?language\b",
    re.IGNORECASE,
)


def _same_language_field(text: str, vocabulary: _Vocabulary) -> str | None:
    """The input whose language the response must match: the one the sentence names ("as the question" and an
    input ``question``), else the prompt's only input."""
    match = _SAME_LANGUAGE.search(text)
    if match is None or not vocabulary.inputs:
        return None
    named = next(group for group in match.groups() if group).lower()
    for field in vocabulary.inputs:
        if field.lower() == named or field.lower().rstrip("s") == named.rstrip("s"):
            return field
    # "the same language the customer wrote in": of the customer's inputs, the one that holds what they wrote
    who = re.search(
        r"\b(user|customer|client|sender|guest|reader|caller|patient|member)\b", match.group(0), re.IGNORECASE
    )
    named = who.group(1).lower() if who else named
    written = [f for f in vocabulary.inputs if re.search(_WRITTEN_INPUT, f, re.IGNORECASE)]
    theirs = [f for f in written if named in f.lower()]
    for candidates in (theirs, written, vocabulary.inputs):  # theirs, else the only text someone wrote, else the only
        if len(candidates) == 1:
            return candidates[0]
    return None


#: Input names for what someone wrote: "customer_message", "user_question", "email_text".
_WRITTEN_INPUT: Final = r"message|text|question|query|email|request|review|comment|note|post"


def _named_language(text: str) -> tuple[str, str] | None:
    """ "Answer in French", "write it in Brazilian Portuguese", "translate into German": the language and its code.
    A word that names no language ("in Python", "in Markdown") is none."""
    from spade_lsp.checks import language_code
    from spade_lsp.errors import NotApplicable

    found: dict[str, str] = {}
    for match in re.finditer(r"\b(?:in|into)\s+((?:[A-Za-z]+\s+)?[A-Za-z]{4,})\b", text, re.IGNORECASE):
        before = text[: match.start()]
        try:
            language_code(match.group(1).split()[-1])
        except NotApplicable:  # "quote it in Norwegian kroner": a language names the currency, the phrase none
            if len(match.group(1).split()) > 1:
                continue
        if re.search(
            r"\b(?:keep|leave|retain|preserve)\s+(?:[\w'-]+\s+){1,6}$|\b(?:stays?|remains?|kept)\s+$", before, re.I
        ):
            continue  # "leave our product and feature names in English", "the sign-off stays in English": not the reply
        for words in (match.group(1), match.group(1).split()[-1]):
            try:
                found.setdefault(language_code(words), words)
                break
            except NotApplicable:
                continue
    if len(found) != 1:
        return None  # a reply has one language: "(du in German, tu in French)" names cases, not the reply's
    code, words = next(iter(found.items()))
    return words, code


#: A list's heading that bans every item under it: "Don't:", "Never:", "**Avoid**", "## Don'ts".
_BAN_HEADING: Final = re.compile(
    r"^\s*(?:#{1,6}\s*)?(?:\*\*)?(?:don'?t|do not|don'ts|never|avoid|must not|not allowed)(?:\*\*)?\s*:?(?:\*\*)?\s*$",
    re.IGNORECASE,
)
_LIST_ITEM: Final = re.compile(r"^\s*(?:[-*•+]|\d+[.)])\s+")


_LEADING_EACH: Final = re.compile(r"(?:(?:for|in)\s+)?(?:each|every)\b", re.IGNORECASE)


def _lines_before_item(prompt: str, sentence: str) -> list[str] | None:
    """The prompt's lines up to the sentence (the last one the item's marker), when the sentence opens a list item."""
    at = prompt.find(sentence.strip())
    if at < 0:
        return None
    own = _LIST_ITEM.match(sentence.strip())  # a sentence read with its marker ("- Start with ...")
    lines = (prompt[:at] + (own.group(0) if own else "")).splitlines()
    return lines if lines and _LIST_ITEM.match(lines[-1]) else None


#: A list item that opens with a JSON key: '- "dish": the dish name', "* confidence (high, medium or low)".
_KEY_ITEM: Final = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+[\"“'`]?(?P<key>[A-Za-z_][\w-]{0,30})[\"”'`]?\s*(?::|\(|—|-\s)")


#: Keys beyond a set refused: "with exactly these keys", "JSON only, no extra keys", "NEVER include keys other than
#: the seven listed", "only these fields", "Return exactly this shape (the importer rejects unknown keys)".
_ONLY_THESE_KEYS: Final = re.compile(
    r"\b(?:exactly|only)\s+(?:these|the\s+following|the)\s+(?:\w+\s+)?(?:keys|fields)\b"
    r"|\bno\s+(?:extra|other|additional|more)\s+(?:keys|fields)\b|\b(?:keys|fields)\s+other\s+than\b"
    r"|\b(?:rejects?|refuses?|drops?|fails\s+on)\s+(?:any\s+)?(?:unknown|unlisted|extra|other|additional)\s+(?:keys|fields)\b"
    r"|\bexactly\s+this\s+(?:shape|structure|schema)\b",
    re.IGNORECASE,
)


@lru_cache(maxsize=64)
def _template_keys(prompt: str) -> tuple[str, ...]:
    """The keys a prompt's JSON template holds ('{{"category": "...", "urgency": "..."}}'), at any depth, in order:
    what "no extra keys" leaves a response (a nested object's keys are allowed at the top, which refuses less).
    Read once per prompt: every instruction of it asks."""
    return tuple(dict.fromkeys(re.findall(r"[\"“]([A-Za-z_][\w-]{0,40})[\"”]\s*:", prompt)))


def _layout_keys(prompt: str) -> set[str]:
    """The keys a JSON template of the prompt lays out, each opening a line or following "{" or ",": not a quoted
    word a sentence goes on from ('no "th"/"st": Saturday 18 October')."""
    return set(re.findall(r"(?:^|[{,])[ \t]*[\"“]([A-Za-z_][\w-]{0,40})[\"”][ \t]*:", prompt, re.MULTILINE))


def _keys_listed_after(prompt: str, sentence: str) -> list[str]:
    """The JSON keys a sentence ending in "these keys:" or "the following fields:" lists in the items below it,
    each item opening with its key; none when the sentence asks no such thing or an item names no key."""
    if not re.search(r"\b(?:keys|fields|properties)\s*(?:\([^)]*\))?\s*:\s*$", sentence, re.IGNORECASE):
        return []
    items = _items_after(prompt, sentence)
    keys = [found.group("key") for line in items if (found := _KEY_ITEM.match(line))]
    return keys if len(keys) >= 2 and len(keys) == len(items) else []


def _lines_below(prompt: str, sentence: str) -> list[str]:
    """The prompt's lines after the line the sentence ends on (none when the prompt does not hold it)."""
    at = prompt.find(sentence.strip())
    return [] if at < 0 else prompt[at + len(sentence.strip()) :].splitlines()[1:]


def _next_block(prompt: str, sentence: str) -> list[str]:
    """The lines of the block right below the sentence (after any blank line), up to the next blank line."""
    lines = _lines_below(prompt, sentence)
    while lines and not lines[0].strip():
        lines.pop(0)
    return list(itertools.takewhile(str.strip, lines))


def _block_after(prompt: str, sentence: str) -> list[str]:
    """The block right below the sentence, stripped (:func:`_next_block`): a signature or footer to copy. None when
    the block is long or runs on (no block, but the rest of the prompt)."""
    block = [line.strip() for line in _next_block(prompt, sentence)]
    return block if 1 <= len(block) <= 6 and all(len(line) <= 80 for line in block) else []


def _items_after(prompt: str, sentence: str) -> list[str]:
    """The top-level items of the list right below the sentence (their nested lines left out), as written."""
    lines = _lines_below(prompt, sentence)
    items: list[str] = []
    indent: int | None = None
    for line in lines:
        if not line.strip():
            if items:
                break
            continue
        depth = len(line) - len(line.lstrip())
        if indent is not None and depth > indent:
            continue  # a nested line under an item
        if not _LIST_ITEM.match(line):
            break
        indent = depth
        items.append(line)
    return items


#: A rule mapping a kind of input to what the response says of it ("Messages that are only thanks / pleasantries ->
#: other, low", "Noise 22:00-07:00 -> security, within_1h"): only the outcome asks anything of the response. Not
#: a format ("List each swap as: original -> replacement") nor a quoted mapping.
_CASE_TO_OUTCOME: Final = re.compile(r"^[-*•]?\s*(?P<case>[^:\"“\n]+?)\s+(?:->|→|=>)\s+(?P<outcome>\S.*)$", re.DOTALL)
#: "markdown" naming the kind of an element the sentence speaks of ("no markdown headings or bold", "use markdown
#: tables"): the sentence is about those elements, not about markdown as a whole.
_MARKDOWN_ELEMENT: Final = re.compile(
    r"\bmarkdown\s+(?=(?:headings?|headers?|bold|tables?|lists?|bullets?|bullet points?|links?|italics?|titles?)\b)",
    re.IGNORECASE,
)
#: An order asked of the parts a sentence lists: "in this order", "in order:", "in the following order" (never "in
#: order to").
_IN_ORDER: Final = re.compile(
    r"\bin\s+(?:(?:this|that|the\s+following|the\s+given|the\s+same|exactly\s+this)\s+)?order\b(?!\s+to\b)",
    re.IGNORECASE,
)
#: A sentence that lists the response's headings below it: "Use exactly these headings, in this order, each
#: followed by a short answer:", "Organise it under the following sections:".
_HEADINGS_INTRO: Final = re.compile(r"\b(?:headings|headers|sections)\b[^:\n]*:\s*$", re.IGNORECASE)
#: An item of such a list: the heading, then what its part holds in brackets or after a colon or a dash
#: ("- Circumstances (2-4 sentences, plain English)", "- Missing information: items to chase").
_HEADING_ITEM: Final = re.compile(
    r"^\s*(?:[-*•+]|\d+[.)])\s+(?:\*\*)?(?P<name>[^()\n:*]{1,50}?)(?:\*\*)?\s*(?:\((?P<inner>[^)\n]*)\)[.,;:]?|:|\s[-–—]\s|$)"
    r"\s*(?P<rest>.*)$"
)


def _headings_listed_after(prompt: str, sentence: str) -> list[str]:
    """The headings a sentence ending in "these headings:" lists in the items below it, each item opening with a
    heading of a few words; none when the sentence asks no such thing or an item is no such heading."""
    if not _HEADINGS_INTRO.search(sentence):
        return []
    names = [
        found.group("name").strip() for line in _items_after(prompt, sentence) if (found := _HEADING_ITEM.match(line))
    ] or _heading_lines_after(prompt, sentence)
    return names if len(names) >= 2 and all(1 <= len(re.findall(r"\w+", name)) <= 6 for name in names) else []


#: A line that opens with its heading in bold, then what the part holds: "**What happened** - 2-3 sentences".
_BOLD_HEADING_LINE: Final = re.compile(r"^\s*\*\*([^*\n]{1,50}?):?\*\*\s*(?:[-–—:]\s|$)")


def _heading_lines_after(prompt: str, sentence: str) -> list[str]:
    """The headings on the lines right below the sentence, one a line: markdown ("## Today and Tonight") or a
    bold one opening its line ("**What happened** - 2-3 sentences", blank lines between them allowed), up to the
    first line that is none (a blank line before them aside)."""
    names = []
    for line in _next_block(prompt, sentence):
        heading = _FIRST_HEADING.match(line)
        if heading is None:
            break
        names.append(heading.group(1).strip())
    if names:
        return names
    for line in _lines_below(prompt, sentence):
        if not line.strip():
            continue
        bold = _BOLD_HEADING_LINE.match(line)
        if bold is None:
            break
        names.append(bold.group(1).strip())
    return names or _plain_heading_lines_after(prompt, sentence)


#: A heading on a line of its own, unmarked: "Caring for your child at home", "Follow-up" (no sentence, no label).
_PLAIN_HEADING_LINE: Final = re.compile(r"^\s*([A-Z][\w&/'’-]*(?:[ \t]+[\w&/'’-]+){0,5})\s*$")


def _plain_heading_lines_after(prompt: str, sentence: str) -> list[str]:
    """Unmarked headings, one a line, in the block right below a sentence that asks for them ("Use exactly these
    four headings, in this order, each on its own line:" over "Medicines", "When to get help", ...): at least two,
    every line of the block one."""
    if not _HEADINGS_INTRO.search(sentence):
        return []
    block = _next_block(prompt, sentence)
    found = [_PLAIN_HEADING_LINE.match(line) for line in block]
    return [m.group(1) for m in found if m is not None] if len(block) >= 2 and all(found) else []


@lru_cache(maxsize=64)
def _listed_headings(prompt: str) -> frozenset[str]:
    """Every heading the prompt lists under a sentence that introduces the response's headings, lower-cased."""
    return frozenset(
        name.lower()
        for line in prompt.splitlines()
        if _HEADINGS_INTRO.search(line)
        for name in _headings_listed_after(prompt, line)
    ) | frozenset(name.lower() for line in prompt.splitlines() for name in _slashed_titles(line))


def _heading_item(prompt: str, sentence: str) -> str | None:
    """An item of a listed heading with what its part holds ("- Circumstances (2-4 sentences, plain English)") as
    a labelled line ("Circumstances: 2-4 sentences, plain English"), so a size in it is that part's; None for
    any other sentence."""
    found = _HEADING_ITEM.match(sentence)  # the cheap tests first: this runs for every sentence of the prompt
    if found is None or found.group("name").strip().lower() not in _listed_headings(prompt):
        return None
    intro = _list_intro(prompt, sentence)
    if intro is None or not _HEADINGS_INTRO.search(intro):
        return None
    holds = " ".join(part for part in (found.group("inner"), found.group("rest")) if part and part.strip())
    return f"{found.group('name').strip()}: {holds}" if holds else None


def _schema_keys_after(prompt: str, sentence: str) -> list[str]:
    """The keys a JSON Schema right after the sentence requires ("must validate against this JSON Schema:" over
    the schema), or else the properties it lists; a schema written with a template's doubled braces too. Empty
    when no schema follows the sentence."""
    at = prompt.find(sentence.strip())
    if at < 0 or not re.search(r"\bschema\b", sentence, re.IGNORECASE):
        return []
    rest = prompt[at + len(sentence.strip()) :]
    opening = re.match(r"\s*(?:```(?:json)?\s*)?(?=\{)", rest)
    if opening is None:
        return []
    block = rest[opening.end() :]
    if block.startswith("{{"):  # a str.format template writes a literal brace twice
        block = block.replace("{{", "{").replace("}}", "}")
    try:
        schema, _ = json.JSONDecoder().raw_decode(block)
    except ValueError:
        return []
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return []
    required = schema.get("required")
    keys = required if isinstance(required, list) and required else list(schema["properties"])
    return [str(key) for key in keys]


#: A checklist's box before an item: "[ ] No emoji", "[x] ...".
_CHECKBOX: Final = re.compile(r"\[[ xX]?\]\s+\S")


def _schema_key_lines(text: str) -> list[str]:
    """The lines of a unit that are all a schema's key lines ('"urgency": "P1" | "P2" | "P3",'), each a rule of its
    own; none when any line is something else."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines if all(re.match(r"\"[^\"\n]{1,60}\"\s*:", line) for line in lines) else []


def _is_json_fragment(text: str) -> bool:
    """A line of a JSON document the prompt shows (a schema, an example object), not an instruction: a brace or a
    bracket, or a key whose value is JSON ('"title": {{"type": "string"}},') or opens a nested one. A schema line
    written in words ('"confidence": "high" or "low"') is an instruction."""
    line = text.strip()
    if re.match(r"[{}\[\]]", line) and not _CHECKBOX.match(line):
        return True
    if not re.match(r"\"[^\"\n]{1,60}\"\s*:", line):
        return False
    if line.endswith(("{", "[")):
        return True
    try:
        json.loads("{" + line.rstrip(",").replace("{{", "{").replace("}}", "}") + "}")
    except ValueError:
        return False
    return True


def _parent_item(prompt: str, sentence: str) -> str | None:
    """The text of the list item a nested item sits under ("- Each item" over "  - one line, 12 words max")."""
    lines = _lines_before_item(prompt, sentence)
    if lines is None:
        return None
    indent = len(lines[-1]) - len(lines[-1].lstrip())
    for line in reversed(lines[:-1]):
        if not line.strip():
            continue
        depth = len(line) - len(line.lstrip())
        if depth < indent:
            return _clean(line) if _LIST_ITEM.match(line) else None
    return None


def _paragraph_label(prompt: str, sentence: str) -> str | None:
    """The label that opens the sentence's paragraph ("X: no more than 280 characters. ..."), when it names a
    section the prompt asks for ('Start each post with its label ("X:", "LinkedIn:")')."""
    at = prompt.find(sentence.strip())
    if at < 0:
        return None
    paragraph = re.split(r"\n\s*\n", prompt[:at])[-1]
    opening = re.match(r"\s*([A-Z][\w/&'-]*(?: [\w/&'-]+){0,3}):\s", paragraph + sentence.strip())
    if opening is None or "\n" in paragraph:
        return None  # a label on a line of its own ("Rules:") heads a list, not a paragraph of the output's part
    name = opening.group(1)
    return name if _has_section(prompt, name.lower()) else None


#: A section's title on a line of its own, as a prompt lays out its output: "Summary", "**Risks**" (no colon: "Rules:"
#: introduces a list, and a sentence ends in punctuation; a markdown heading is how prompts mark their own parts,
#: "## Task", "## Output format").
_TITLE_LINE: Final = re.compile(r"^\s*(?:\*\*)?([A-Z][\w'&/-]*(?: [\w'&/-]+){0,3})(?:\*\*)?\s*$")
#: Names of a prompt's own parts, which head what the prompt says rather than a part of the output.
_PROMPT_PARTS: Final = frozenset(
    {
        "task", "context", "background", "input", "inputs", "output", "format", "instructions", "rules",
        "requirements", "constraints", "guidelines", "style", "tone", "examples", "example", "role", "persona",
        "data", "output format", "response format", "answer format",
    }
)  # fmt: skip


def _section_title_over(prompt: str, sentence: str) -> str | None:
    """The title heading the block of lines a sentence is in ("Summary" over "2 to 4 sentences on what was
    discussed"), in a prompt that speaks of its output's sections or headings: the sentence describes that
    section. None for a list item (a list under a title is the list's own) or a sentence on the title's line."""
    at = prompt.find(sentence.strip())
    if at < 0 or _LIST_ITEM.match(sentence.strip()):
        return None
    if not re.search(r"\b(?:sections?|headings?|headers?|headed|titled)\b", prompt, re.IGNORECASE):
        return None
    block = re.split(r"\n\s*\n", prompt[:at])[-1].split("\n")  # the last: the sentence's line before it
    if len(block) < 2 or any(_LIST_ITEM.match(line) for line in block[1:]):
        return None  # the sentence is on the block's first line, or below a list of the block
    title = _TITLE_LINE.match(block[0])
    if title is None or _BAN_HEADING.match(block[0]) or title.group(1).lower() in _PROMPT_PARTS:
        return None
    return title.group(1)


def _titled_list_over(prompt: str, sentence: str) -> str | None:
    """The title of the list an item is in where the answer's form has a part of that name ("Headline:" over "- At
    most 70 characters including spaces", in a prompt whose answer is "HEADLINE: <headline>" ...): the item describes
    that part."""
    intro = _list_intro(prompt, sentence)
    title = re.fullmatch(r"([A-Za-z][\w -]{0,30}?)\s*:", intro.strip()) if intro else None
    if title is None:
        return _keyed_heading_over(prompt, sentence)
    if title.group(1).lower() in _PROMPT_PARTS:
        return None
    name = re.escape(title.group(1))
    slot = rf"^\s*(?:#{{1,6}}\s*)?\**{name}\**\s*:\**\s*(?:<[^>\n]*>|\[[^\]\n]*\])"
    if re.search(slot, prompt, re.IGNORECASE | re.MULTILINE):
        return title.group(1)
    # "SEO title:" over its rules, where the form's line is "SEO: <SEO title>": the label of the slot it names
    named = re.search(rf"^\s*\**([A-Za-z][\w -]{{0,20}}?)\**\s*:\s*[<\[][^>\]\n]*\b{name}\b", prompt, re.I | re.M)
    if named:
        return named.group(1)
    # "Rules for the description:" over its rules, where the answer is laid out line by line and one line is the
    # bare slot "<description>": that line
    ruled = re.fullmatch(
        r"(?:rules|requirements|guidelines|constraints)\s+(?:for|on)\s+(?:the|your|each)\s+(.+)", title.group(1), re.I
    )
    if ruled:
        return _bare_slot_line(prompt, ruled.group(1))
    # "reason:" over "- One sentence, at most 25 words", where the answer's JSON template has a "reason" key
    return _template_key_named(prompt, title.group(1))


def _keyed_heading_over(prompt: str, sentence: str) -> str | None:
    """The JSON key a list's heading names, when the heading has no colon ("REASON", "## Reason", "**Reason**" over
    "- One sentence, 25 words maximum.") and the answer's template holds that key: the items describe its value."""
    line = _line_over_list(prompt, sentence) or ""
    heading = re.fullmatch(r"\s*(#{1,6}\s*|\*\*)?([A-Za-z][\w -]{0,30}?)(?:\*\*)?\s*", line)
    if heading is None or not (heading.group(1) or heading.group(2).isupper()):
        return None  # a plain line of prose above the list, not a heading
    return _template_key_named(prompt, heading.group(2))


def _template_key_named(prompt: str, name: str) -> str | None:
    """The key of the answer's JSON template that ``name`` names ("Reason", "NEEDS HUMAN" for "needs_human")."""
    wanted = name.strip().lower().replace(" ", "_")
    return next((key for key in _template_keys(prompt) if key.lower() == wanted), None)


def _bare_slot_line(prompt: str, part: str) -> str | None:
    """ "line 2" where the lines right below a layout's introduction ("Output exactly these five lines:") lay the
    answer out one line each and the second is a slot naming ``part`` and nothing else ("<description>"); "paragraph
    1" where the layout's parts stand a blank line apart and the slot is a part of its own ("Write the notes in this
    format:", a blank line, "<summary paragraph>", a blank line, "In this episode:" ...)."""
    lines = prompt.splitlines()
    slot = re.compile(rf"\s*<[^<>\n]*\b{re.escape(part)}\b[^<>\n]*>\s*", re.IGNORECASE)
    for at, line in enumerate(lines):
        if not slot.fullmatch(line):
            continue
        start = at
        while start > 0 and lines[start - 1].strip() and not lines[start - 1].rstrip().endswith(":"):
            start -= 1
        if start > 0 and _LAYOUT_INTRO.search(lines[start - 1]):
            return f"line {at - start + 1}"
        alone = not lines[at - 1].strip() and (at + 1 == len(lines) or not lines[at + 1].strip()) if at else False
        return _block_of_layout(lines, at) if alone else None
    return None


def _block_of_layout(lines: Sequence[str], at: int) -> str | None:
    """ "paragraph k" for the line ``at``, a part of its own, when it is the k-th block below a layout's
    introduction, the blocks a blank line apart; None when no introduction heads the blocks above it."""
    blocks, inside = 1, False
    for line in reversed(lines[:at]):
        if not line.strip():
            inside = False
        elif _LAYOUT_INTRO.search(line) and not inside:
            return f"paragraph {blocks}"
        elif not inside:
            blocks, inside = blocks + 1, True
    return None


def _line_over_list(prompt: str, sentence: str) -> str | None:
    """The line right above the list a top-level item is in (past its other items and the blank lines between
    them), if any."""
    lines = _lines_before_item(prompt, sentence)
    if lines is None or lines[-1][:1].isspace():
        return None
    for line in reversed(lines[:-1]):
        if not line.strip() or _LIST_ITEM.match(line) or line[:1].isspace():
            continue  # the list's other items, their continuation lines and the blank lines between them
        return line
    return None


def _list_intro(prompt: str, sentence: str) -> str | None:
    """The line ending in a colon that introduces the list a top-level item is in ("For each step:" over "- Start
    with ..."), if any."""
    line = _line_over_list(prompt, sentence)
    return _clean(line) if line is not None and line.rstrip().endswith(":") else None


def _under_a_ban(prompt: str, sentence: str) -> bool:
    """Whether the sentence is an item of a list whose heading bans its items ("Don't:" over "- Use emoji.")."""
    lines = _lines_before_item(prompt, sentence)
    if lines is None:
        return False
    for line in reversed(lines[:-1]):
        if line.strip() and not _LIST_ITEM.match(line):
            return _BAN_HEADING.match(line) is not None
    return False


#: What makes a sentence saying who the model is a rule as well: a bound, a ban, an "only", a quality asked of
#: the writing ("You are a friendly nurse who ...", "You are not a lawyer and your output is not legal advice").
_RULE_CUE: Final = re.compile(
    r"\b(?:must|should|always|never|only|not|no|avoid|without|at\s+(?:most|least)|keep|make\s+sure|ensure|"
    r"under|within|\d+)\b|n't\b",
    re.IGNORECASE,
)


def _only_a_role(text: str, role: bool) -> bool:
    """Whether the sentence only says who the model is ("You are drafting replies for Summit Works Climbing, a
    bouldering centre in Leeds.", "Act as a B2B sales copywriter."): a judge asked whether a response follows it
    answers yes to any reply on the task, at a model call per example, so no judge check is drafted."""
    unquoted = _QUOTED.sub(" ", text)
    return (
        role
        and _RULE_CUE.search(unquoted) is None
        and not any(re.search(pattern, unquoted, re.IGNORECASE) for pattern, _, _ in _QUALITIES)
    )


def _ask_draft(text: str, category: str) -> _Draft:
    return _Draft(
        f"llm_{_slug(text, 40)}",
        category,
        "Asks the model whether the response follows this instruction.",
        f"ask_llm({_literal(_question(text))}, response, prompt=prompt)",
        None,
        asks_llm=True,
    )


def _written_in_another_language(instruction: Instruction) -> bool:
    """Whether an instruction is a sentence in a language other than English, which these readings (written
    for English) cannot read: "- Menciona todos los ingredientes principales."."""
    from spade_lsp.checks import LANGUAGE_MIN_WORDS, language

    text = _clean(instruction.text)
    words = set(re.findall(r"[a-z']+", text.lower()))
    return (
        instruction.kind in ("sentence", "bullet")
        and len(text.split()) >= LANGUAGE_MIN_WORDS
        and not words & _ENGLISH_FUNCTION_WORDS  # langdetect misreads short English ("You answer questions ...")
        and language(text) not in ("", "en")
    )


#: Short words of Spanish, French, German, Italian and Portuguese instructions that English ones do not write.
_FOREIGN_WORDS: Final = (
    "el la los las del que con por para una uno en como más menos palabras frases le les des du et pour avec "
    "une mots phrases der die das und mit für nicht kein keine höchstens mindestens wörter sätze il di che per "
    "gli della parole frasi não em da uma palavras par sur dans sans auf zu bei sin sobre"
)
_FOREIGN_FUNCTION_WORDS: Final = frozenset(_FOREIGN_WORDS.split())


def _in_another_language(text: str) -> bool:
    """Whether a sentence, however short, is in one of the languages :func:`_foreign_drafts` reads ("Escribe en
    español.")."""
    words = set(re.findall(r"[^\W\d_]+", text.lower()))
    return not words & _ENGLISH_FUNCTION_WORDS and bool(words & _FOREIGN_FUNCTION_WORDS)


_FOREIGN_NEGATION: Final = r"(?:no|nunca|jamás|ni|ne|n'|pas|jamais|nicht|kein\w*|niemals|non|mai|não|nem)"
_FOREIGN_UNITS: Final = {
    "palabras": "words", "mots": "words", "wörter": "words", "worte": "words", "parole": "words", "palavras": "words",
    "frases": "sentences", "oraciones": "sentences", "phrases": "sentences", "sätze": "sentences", "frasi": "sentences",
    "líneas": "lines", "lignes": "lines", "zeilen": "lines", "righe": "lines", "linhas": "lines",
    "párrafos": "paragraphs", "paragraphes": "paragraphs", "absätze": "paragraphs", "paragrafi": "paragraphs",
}  # fmt: skip
_FOREIGN_AT_MOST: Final = (
    r"(?:como\s+)?máximo(?:\s+de)?|no\s+más\s+de|hasta|au\s+maximum|au\s+plus|pas\s+plus\s+de|maximum|"
    r"maximal|höchstens|nicht\s+mehr\s+als|al\s+massimo|non\s+più\s+di|no\s+máximo|até"
)
_FOREIGN_AT_LEAST: Final = r"(?:como\s+)?mínimo|al\s+menos|au\s+moins|minimum|mindestens|almeno|pelo\s+menos"
_FOREIGN_COUNT: Final = re.compile(
    rf"\b(?P<bound>{_FOREIGN_AT_MOST}|{_FOREIGN_AT_LEAST})\s+(?P<n>\d+)\s+(?P<unit>{'|'.join(_FOREIGN_UNITS)})\b"
    rf"|\b(?P<n2>\d+)\s+(?P<unit2>{'|'.join(_FOREIGN_UNITS)})\s+(?P<bound2>(?:como\s+)?máximo|maximum|maximal|"
    r"höchstens|al\s+massimo|no\s+máximo)\b",
    re.IGNORECASE,
)
_FOREIGN_END: Final = re.compile(
    r"\b(?:termin\w*|acab\w*|finaliz\w*|cierr\w*|fini\w*|beende\w*|schlie(?:ß|ss)\w*|end(?:e|et)\b|conclu\w*)\b"
    r"[^\"“]{0,80}?[\"“](?P<text>[^\"”\n]{1,40})[\"”]",
    re.IGNORECASE,
)
_FOREIGN_START: Final = re.compile(
    r"\b(?:empie\w*|comien\w*|inici\w*|commenc\w*|beginn\w*|fang\w*\s+an|inizi\w*|comec\w*|começ\w*)\b"
    r"[^\"“]{0,40}?[\"“](?P<text>[^\"”\n]{1,40})[\"”]",
    re.IGNORECASE,
)


def _foreign_drafts(text: str, vocabulary: _Vocabulary) -> Iterator[_Draft]:
    """The few readings a sentence in Spanish, French, German, Italian or Portuguese needs no grammar for: the
    language it names ("Escribe en español"), a count with its bound ("como máximo 35 palabras"), words it bans in
    quotes ("No uses las palabras "delicioso" o "exquisito""), a quoted opening or closing line ("Termina con una
    línea que empiece por "Alérgenos:""). The rest a model reads."""
    from spade_lsp.checks import language_code
    from spade_lsp.errors import NotApplicable

    for found in re.finditer(r"\b(?:en|in|auf|em|na)\s+([^\W\d_]{4,})\b", text, re.IGNORECASE):
        try:
            yield library.language_draft(code=language_code(found.group(1)), name=found.group(1).lower())
            break
        except NotApplicable:
            continue
    for found in _FOREIGN_COUNT.finditer(text):
        bound = (found.group("bound") or found.group("bound2")).lower()
        number = int(found.group("n") or found.group("n2"))
        unit = _FOREIGN_UNITS[(found.group("unit") or found.group("unit2")).lower()]
        at_least = re.fullmatch(_FOREIGN_AT_LEAST, bound, re.IGNORECASE) is not None
        yield library.count_draft(unit, number if at_least else None, None if at_least else number, None)
    quoted = [phrase.strip() for phrase in re.findall(r"[\"“«]([^\"”»\n]{1,40})[\"”»]", text)]
    end, start = _FOREIGN_END.search(text), _FOREIGN_START.search(text)
    if end is not None:
        yield library.last_line_draft(end.group("text")) if start else library.edge_draft(end.group("text"), end=True)
    elif start is not None:
        yield library.edge_draft(start.group("text"), end=False)
    negated = re.search(rf"\b{_FOREIGN_NEGATION}\b", text, re.IGNORECASE)
    if negated is not None and re.search(
        r"exclamaci|d'exclamation|ausrufezeichen|esclamativ|exclamaç", text[negated.start() :], re.IGNORECASE
    ):
        yield library.phrases_draft(["!"], exclude=True)
    if negated is not None and quoted and end is None and start is None:
        after = [phrase for phrase in quoted if text.find(phrase) > negated.start()]
        if after:
            yield library.phrases_draft(after, exclude=True)


#: Words nearly every English instruction holds and other languages' rarely do.
_ENGLISH_FUNCTION_WORDS: Final = frozenset(
    "the and of to for with is are be it its this that you your from should must not".split()  # noqa: SIM905
)


def _is_section_label(label: str) -> bool:
    """``Subject Line: write ...`` names a part of the output; ``Never use words like: ...`` does not."""
    words = label.lower().split()
    verbs = {"never", "always", "do", "don't", "use", "include", "avoid", "note", "important", "example", "task"}
    sizes = {"limit", "length", "count", "maximum", "minimum", "max", "min"}  # "Word limit: {word_limit} words"
    return (
        len(words) <= 3
        and not set(words) & verbs
        and not (words and words[-1] in sizes)
        and not _POSITION_LABEL.match(label.lower())
    )


#: A label that names a place in the response rather than a section of it: "First line:", "Step 2:".
_POSITION_LABEL: Final = re.compile(
    r"(?:(?:step|line|sentence|paragraph|part|item)\s+\d+|(?:first|second|third|fourth|last|final|opening|closing|next)"
    r"\s+(?:line|sentence|paragraph|part|step|item))\s*:?"
)


def _names_itself(label: str, text: str) -> bool:
    """``Subject Line: write a subject line that ...`` names a part of the output the response labels;
    ``Pain: introduce a problem ...`` outlines what to say there, and asks for no heading."""
    body = text.split(":", 1)[1] if ":" in text else ""
    head = label.split()[-1]
    return head.lower() not in _ABSTRACT and checks_contains_phrase(body, head)


def _ask_category(categories: set[str], qualitative: bool) -> str:
    for category in (EXCLUSION, INCLUSION, QUALITATIVE_ASSESSMENT, WORKFLOW_DESCRIPTION):
        if category in categories:
            return category
    return QUALITATIVE_ASSESSMENT if qualitative else WORKFLOW_DESCRIPTION


def _question(sentence: str) -> str:
    return f"The prompt that produced this response instructs: \u201c{sentence}\u201d Does the response follow it?"


def _clean(text: str) -> str:
    """The sentence without its list marker (a checklist's box too: "- [ ] No emojis", "[ ] No emojis"; not a bold
    title's "**"), its spacing made single, and the shorthand "w/" read as "with" ("open w/ "Hi {name}"")."""
    text = re.sub(r"(?<![\w/])w/(?=\s)", "with", text)
    return re.sub(r"\s+", " ", re.sub(r"^\s*(?:(?:[-•+]|\*(?!\*)|\d+[.)])\s*)?(?:\[[ xX]?\](?=\s))?", "", text)).strip()


def _is_data_line(text: str, vocabulary: _Vocabulary) -> bool:
    """``[topic]: {topic}``, ``Customer reviews: {reviews}`` and a bare ``{docs}``: where inputs go, not what the
    output must do (a short label, then nothing but placeholders)."""
    placeholder = r"\{\{?\s*\w+\s*\}?\}|\[\w+\]"
    if re.fullmatch(rf"[\w '\-/()]{{1,40}}:\s*(?:(?:{placeholder})[\s,;]*)+\.?", text):
        return True
    # the input's name over its value on the next line, with a note on it: "Call transcript (agent and caller,
    # auto-transcribed, may contain errors):" over {call_transcript}
    label = re.fullmatch(r"(?P<label>[^():\n]{1,60}?)\s*\([^)\n]*\)\s*:", text)
    if label is not None:  # the prompt is searched only for such a label: this runs for every sentence
        below = re.search(re.escape(text) + r"[ \t]*\n\s*\{\{?\s*(\w+)\s*\}?\}[ \t]*(?:\n|$)", vocabulary.prompt)
        if below and set(below.group(1).lower().split("_")) <= set(re.findall(r"\w+", label["label"].lower())):
            return True
    stripped = re.sub(placeholder, "", text)
    return not re.search(r"[A-Za-z]{2,}", stripped.replace("BEGIN TEXT", "").replace("END TEXT", ""))


#: A note on an input's label that keeps the value from the reader: "Seller metrics (context only):", "Interview
#: panel feedback (INTERNAL, see below):", "Internal notes (do not share):"; the note opens the parenthesis, so a
#: long aside that mentions a ban in passing ("(only use these facts - if ..., don't mention it)") is none.
_PRIVATE_NOTE: Final = re.compile(
    r"\((?=[^()]{0,25}?\b(?:context\s+only|for\s+context|background\s+only|internal|confidential|private|not\s+for\s+the"
    r"\s+[\w-]+|(?:do\s+not|don't|never)\s+(?:share|quote|mention|cite|repeat|reveal))\b)[^()]*\)\s*:",
    re.IGNORECASE,
)
#: A ban on what the inputs mark: 'anything marked CONFIDENTIAL in the minutes must not appear', 'Anything under
#: "Confidential comments to the editor" must not appear in the letter', 'lines starting with "INT:" are internal
#: and must not appear in ANY form'.
_MARKED_BAN: Final = re.compile(
    r"\b(?i:anything|everything|items?|lines?|parts?|notes?|sections?|comments?)\s+(?i:that\s+(?:is|are)\s+|that's\s+)?"
    r"(?:(?i:marked|labell?ed|flagged|tagged)\s+(?i:as\s+)?[\"“']?(?P<caps>[A-Z][A-Z _-]{2,}[A-Z])\b[\"”']?"
    r"|(?i:under|below|in)\s+(?i:the\s+)?[\"“](?P<heading>[^\"”\n]{3,60})[\"”]"
    # 'lines starting with "INT:" are internal'
    r"|(?i:starting|beginning|that\s+starts?|that\s+begins?|prefixed)\s+(?i:with\s+)?[\"“'](?P<prefix>[^\"”'\n]{2,20})[\"”'])",
)


def input_rule_drafts(sentence: str, context: PromptContext) -> Iterator[_Draft]:
    """The checks a sentence asks for by how it names the prompt's inputs and layout: an input kept from the
    reader, every identifier an input lists, a greeting by the name an input gives, a label the inputs decide, a
    layout line's values. The LLM synthesizer writes them too, whatever the model picked: reading them needs no
    model, and a small one rarely names them."""
    yield from _input_rule_drafts(_clean(sentence), _Vocabulary(context))


def _input_rule_drafts(text: str, vocabulary: _Vocabulary) -> Iterator[_Draft]:
    yield from _private_drafts(text, vocabulary)
    yield from _no_names_drafts(text, vocabulary)
    if _NO_COMPANY.search(text):
        yield library.names_no_company_draft()
    cited = _CITATION.search(text)
    if cited is not None and _negation(text) is None:  # "Cite every claim ... in square brackets, like [1]"
        yield from library.citation_drafts(cited.group("form"), each_sentence=_EACH_CLAIM.search(text) is not None)
    if _NO_SET_TIME.search(text):
        yield library.names_no_set_time_draft()
    if _NO_CONTACT.search(text):
        yield library.repeats_no_contact_draft()
    if _NO_QUOTING.search(text) and not _QUOTING_ALLOWED.search(text):
        yield library.quotes_no_one_draft()
    if re.search(r"\bpronouns?\b", text, re.IGNORECASE) and not re.search(
        r"\b(?:no|don't|do\s+not|never|avoid|without)\s+(?:\w+\s+){0,2}?pronouns?\b", text, re.IGNORECASE
    ):  # "Third person, using the pronouns given above", not "don't use pronouns"
        for field in vocabulary.inputs:
            if "pronoun" in field.lower():
                yield library.uses_pronouns_draft(field)
    yield from _ids_kept_drafts(text, vocabulary)
    yield from _greeting_drafts(text, vocabulary)
    yield from _label_rule_drafts(text, vocabulary)
    yield from _literal_rule_drafts(text, vocabulary)
    yield from _contact_literal_drafts(text)
    yield from _labelled_value_drafts(text)


#: A ban on naming people: "Never name guests", "no customer PII", "no names in the narrative", "refer to members of
#: the public by role only", "never the customer's name", "don't name the defender", "no GitHub handles".
_NO_NAMES: Final = re.compile(
    r"\b(?:no|never|not|don't|do\s+not|avoid|without|nor)\b[^.;\n]{0,60}?(?:"
    r"\b(?:name|identify)\s+(?:or\s+\w+\s+)?(?:any\s+|an?\s+|the\s+|other\s+)?(?:individual\s+)?"
    r"(?:guests?|customers?|people|persons?|anyone|anybody|individuals?|staff|members?|students?|child(?:ren)?|"
    r"patients?|tenants?|residents?|reviewers?|commenters?|engineers?|players?|defenders?|interviewers?|callers?)\b"
    r"|\b(?:guest|customer|engineer|crew|author|patient|tenant|resident|reviewer|commenter|caller|player|student|"
    r"personal|staff|people's|individual|person|someone|anyone|employee|colleague|leaver|worker)['’]?s?\s+names?\b"
    r"|\b(?:the\s+)?(?:guest|customer|patient|tenant|resident|reviewer|commenter|caller|sender|user|client|"
    r"player|student|child)['’]s\s+(?:(?:full|first|last|real)\s+)?name\b"
    r"|\bnames?\s+in\s+the\s+(?:narrative|summary|report|notes?)\b|\bno\s+names\b|\bPII\b|"
    r"\bpersonal\s+(?:details|data|information)\b|\b(?:github\s+)?handles\b|\bby\s+name\b)"
    r"|\bby\s+(?:their\s+)?role\s+only\b|\bonly\s+by\s+(?:their\s+)?role\b"
    # "Anonymise.", "short, anonymised summaries": no one's name (where the inputs name no one, no check applies)
    r"|\banonymi[sz](?:e|ed|es|ing)\b"
    # "Never blame an individual", "don't single out anyone": blame is laid by naming someone
    r"|\b(?:no|never|not|don't|do\s+not|avoid)\s+(?:\w+\s+){0,2}?(?:blam(?:e|ing)|single\s+out|point(?:ing)?\s+"
    r"(?:the\s+)?fingers?\s+at)\s+(?:an?\s+|any\s+|the\s+)?(?:individual|person|people|anyone|anybody|engineers?|"
    r"colleagues?|staff(?:\s+members?)?|team\s+members?|individuals)\b",
    re.IGNORECASE,
)
#: A ban on repeating someone's contact details: "Never include the resident's name, phone number or email
#: address", "no customer phone numbers", "do not repeat their contact details". Someone's: a bare "no phone numbers"
#: bans every number (a count), the business's own too.
_NO_CONTACT: Final = re.compile(
    r"\b(?:no|never|not|don't|do\s+not|avoid|without|nor)\b[^.;\n]{0,80}?\b(?:\w+['’]s|their|his|her|personal|"
    r"customer|client|resident|tenant|patient|caller|guest|reviewer|commenter|user|sender)\s+(?:[\w-]+,?\s+){0,10}?"
    r"(?:(?:tele)?phone\s+numbers?|mobile\s+numbers?|e-?mail(?:\s+address(?:es)?|s)?|contact\s+(?:details|info\w*))\b",
    re.IGNORECASE,
)
#: A ban on setting a time: "Never promise a specific visit date or time", "Don't promise specific dates or times
#: for repairs", "do not give an exact arrival time".
_NO_SET_TIME: Final = re.compile(
    r"\b(?:no|never|not|don't|do\s+not|avoid|without)\b[^.;\n]{0,30}?\b(?:promise|give|commit\s+to|guarantee|quote|"
    r"offer|state|set|mention|name)\w*\s+(?:a\s+|an\s+|any\s+)?(?:specific|exact|firm|particular|precise)\s+"
    r"(?:\w+\s+)?(?:dates?|times?|days?|appointments?|arrival\s+times?)\b"
    # "do not add days of the week that are not in the input", "never invent dates not given"
    r"|\b(?:no|never|not|don't|do\s+not|avoid)\b[^.;\n]{0,20}?\b(?:add|invent|make\s+up|includ)\w*\s+(?:any\s+)?"
    r"(?:days?\s+of\s+the\s+week|weekdays?|dates?|times?)\s+(?:that\s+(?:are|is)\s+)?(?:not|never)\s+"
    r"(?:in|given|provided|stated|listed)\b",
    re.IGNORECASE,
)
#: A ban on quoting people or their words: "Don't quote anyone directly", "never quote the panel", "do not quote
#: the post in your reason", "no direct quotes". Not a price's quote ("never quote deferral periods" states them),
#: nor quotation marks ("no quotes around the message").
_NO_QUOTING: Final = re.compile(
    r"\b(?:no|never|not|don't|do\s+not|avoid|without)\s+(?:\w+\s+){0,2}?(?:quot(?:e|ing)\s+(?:anyone|anybody|"
    r"someone|them|him|her|people|directly|verbatim|(?:from\s+)?(?:the|their|his|her|any|a|an|other)\s+"
    r"(?:[\w'’-]+\s+){0,2}?(?:panel|posts?|customers?|clients?|users?|reviews?|reviewers?|messages?|authors?|"
    r"interviewers?|feedback|transcript|emails?|sources?|articles?|notes|comments?|speakers?|participants?|callers?|"
    r"patients?|students?|members?|attendees?|colleagues?|staff|people|persons?|reports?|candidates?))\b"
    r"|direct\s+quot(?:es|ations?)\b)",
    re.IGNORECASE,
)
#: What allows some quotations after all: "don't quote anything that is not in the transcript" asks that quotes be
#: real, "only quote ... unless" makes exceptions.
_QUOTING_ALLOWED: Final = re.compile(
    r"\b(?:not\s+in|isn't\s+in|aren't\s+in|unless|other\s+than|except|outside\s+(?:of\s+)?the|more\s+than|"
    r"at\s+length|verbatim\s+from)\b",
    re.IGNORECASE,
)
#: The clause of a quoting ban that names whom not to quote: no phrase to ban ("never quote the panel" bans no
#: "panel").
_QUOTING_CLAUSE: Final = re.compile(r"\b(?:quot(?:e|es|ing)|direct\s+quot(?:es|ations?))\b[^.;,\n]{0,50}", re.I)
#: What a ban on names is not about: names made up (the grounding check's), and names of things.
_NOT_PEOPLE: Final = re.compile(
    r"\b(?:invent\w*|made[- ]up|make\s+up|fabricat\w*|guess\w*|competitors?|compan(?:y|ies)|brands?|products?|"
    r"contractors?|medic\w+|files?|functions?|branch|services?)\s+(?:\w+\s+)?(?:by\s+)?names?\b"
    r"|\b(?:invent|made[- ]up|make\s+up|fabricate)\b",
    re.IGNORECASE,
)


def _no_names_drafts(text: str, vocabulary: _Vocabulary) -> Iterator[_Draft]:
    """The names-no-one check where the sentence bans naming people. An input that is itself someone's name or
    role ("{manager_name}", "{recruiter}") may be named: the prompt gives it to be used (a greeting, a signature)."""
    if not vocabulary.inputs or not _NO_NAMES.search(text) or _NOT_PEOPLE.search(text):
        return
    yield library.names_no_one_draft([field for field in vocabulary.inputs if _NAME_INPUT.search(field)])


#: A ban on naming companies: "never name any company", "never name a contractor", "no company names", "do not
#: identify the supplier" (not competitors, whose names no input gives and no legal form marks).
_NO_COMPANY: Final = re.compile(
    r"\b(?:never|not|don't|no)\b[^.;\n]{0,30}?\b(?:name|identify|mention)\w*\s+(?:or\s+\w+\s+)?(?:a|an|any|the)?\s*"
    r"(?:compan(?:y|ies)|contractors?|suppliers?|firms?|subcontractors?)\b(?!\s+(?:policy|policies|car|address))"
    r"|\bno\s+(?:company|contractor|supplier|firm)\s+names\b",
    re.IGNORECASE,
)
#: Citations asked for in a bracketed form shown by an example: "Cite every claim with the source number in square
#: brackets, like [1]", "cite the section ID of each excerpt you use in square brackets, like [LV-UK-3.2]".
_CITATION: Final = re.compile(
    r"\bcit(?:e|es|ing)\b[^.;\n]{0,100}?\b(?:like|e\.g\.,?|such\s+as|for\s+example,?|as\s+in)\s+"
    r"(?P<form>\[[^\[\]\n]{1,20}\])",
    re.IGNORECASE,
)
#: Each claim or sentence to carry a citation: "Cite every claim", "after each sentence that uses it" is only the
#: sentences that use a source, which no check can tell apart.
_EACH_CLAIM: Final = re.compile(r"\b(?:every|each)\s+(?:claim|statement|fact|sentence)\b(?!\s+that\b)", re.I)
#: Inputs that hold a person's name: "manager_name", "recruiter", "signer", "teacher_role".
_NAME_INPUT: Final = re.compile(
    r"name|manager|recruiter|agent|sender|signer|signatory|author|host|coordinator|owner|teacher|officer|contact|"
    r"editor|staff",
    re.IGNORECASE,
)


#: What says a ban keeps something from the reader, not a repetition or a place: "must not appear in any form",
#: "confidential", "never be shared".
_KEPT_FROM_THE_READER: Final = re.compile(
    r"\b(?:confidential|internal|private|secret|sensitive|context\s+only|in\s+any\s+form|must\s+not\s+appear"
    r"|(?:never|not)\s+(?:be\s+)?(?:shared|revealed|disclosed|passed\s+on))\b",
    re.IGNORECASE,
)


#: What the inputs tag to leave out of what the response takes from them: "Everything in the changelog EXCEPT items
#: tagged [NOPUB]", "all the notes except lines marked [INTERNAL]".
_EXCEPT_TAGGED: Final = re.compile(
    r"\b(?:except|excluding|but\s+not|other\s+than|apart\s+from)\s+(?:for\s+)?(?:the\s+|any\s+)?(?:items?|lines?|entries|"
    r"notes?|anything|everything|parts?)\s+(?:that\s+(?:are|is)\s+)?(?:tagged|marked|labell?ed|flagged)\s+(?:as\s+)?\[[A-Z]",
    re.IGNORECASE,
)
_TAG_MARK: Final = re.compile(r"\[[A-Z][A-Z0-9 _-]{1,20}\]")


def _private_drafts(text: str, vocabulary: _Vocabulary) -> Iterator[_Draft]:
    """The private-input check, where the sentence keeps an input, or the inputs' marked lines, from the reader:
    the label over an input's value with a note that it is for context only, or a ban on what the inputs mark."""
    if _PRIVATE_NOTE.search(text):
        fields = vocabulary.fields_in(text)
        if not fields:  # the label alone on its line, over the input's value: "Seller metrics (context only):"
            below = re.search(re.escape(text) + r"[ \t]*\n\s*\{\{?\s*(\w+)\s*\}?\}[ \t]*(?:\n|$)", vocabulary.prompt)
            fields = [below.group(1)] if below else []
        if fields:
            yield library.keeps_private_draft(fields=fields)
    excepted = _EXCEPT_TAGGED.search(text)
    if excepted is not None:  # "Everything in the changelog EXCEPT items tagged [NOPUB] ... or [UNANNOUNCED]"
        yield library.keeps_private_draft(markers=list(dict.fromkeys(_TAG_MARK.findall(text[excepted.start() :]))))
    marked = _MARKED_BAN.search(text)
    if marked is not None and _KEPT_FROM_THE_READER.search(text):
        yield library.keeps_private_draft(
            markers=[marked.group("caps") or marked.group("heading") or marked.group("prefix")]
        )


#: A list of identifiers the response must carry whole: "List every affected batch code or date exactly as given",
#: "Every permit in the open permits list must appear under Safety".
_EVERY_ID: Final = re.compile(
    r"\b(?:every|each|all(?:\s+the)?)\s+(?:[\w-]+\s+){0,3}?(?P<head>codes?|ids?|identifiers?|permits?|tickets?|lots?"
    r"|batch(?:es)?|skus?|(?:part|order|permit|ticket|reference|serial|lot|batch)\s+numbers?)\b"
    # the head of its noun phrase: not "each ticket reply"
    r"(?=\s*(?:[,.;:/)]|$)|\s+(?:or|and|in|from|of|on|under|that|which|exactly|as|must|should|is|are|listed|given"
    r"|above|below|you|we|with|into|one)\b)",
    re.IGNORECASE,
)
_CARRIED: Final = re.compile(
    r"\b(?:list|include|appear|keep|mention|name|give|copy|cover|state|show|repeat)\w*\b", re.IGNORECASE
)


def _singular_words(text: str) -> set[str]:
    return {
        re.sub(r"(?<=ch|sh|ss|.x)es$|(?<=[a-z]{2}[^s])s$", "", word) for word in re.findall(r"[a-z]+", text.lower())
    }


def _ids_kept_drafts(text: str, vocabulary: _Vocabulary) -> Iterator[_Draft]:
    """The identifiers check, where the sentence asks for every one of a kind its inputs list: the input is the
    one the sentence names (every word of the input's name, in any number: "batch code" of {batch_codes}, "the
    open permits list" of {open_permits}) that holds the kind's noun."""
    every = _EVERY_ID.search(text)
    if every is None:
        return
    # the sentence that asks, not one after it ("... must appear under Safety. Do not drop any.")
    sentence = next((s.text for s in split_sentences(text) if s.start <= every.start() < s.end), text)
    if not _CARRIED.search(sentence) or _negation(sentence) is not None:
        return
    words = _singular_words(text)
    head = _singular_words(every.group("head"))
    fields = vocabulary.fields_in(text) or [
        field
        for field in vocabulary.inputs
        if (named := _singular_words(field.replace("_", " "))) <= words and named & head
    ]
    if len(fields) == 1:
        yield library.ids_kept_draft(fields)


#: A sentence that asks to address the reader by the name an input gives: "Address the customer by their first
#: name", "Greet {customer_name} by name", "a greeting that uses the customer's first name".
_BY_NAME: Final = re.compile(
    r"\b(?:address|greet|call)(?:s|es|ed|ing)?\s+(?P<who>\{\{?\s*\w+\s*\}?\}|(?:the\s+)?[\w -]{1,40}?)\s+"
    r"(?:(?:by|with|using)\s+(?:(?:their|his|her|its|the)\s+)?(?:(?P<first>first\s+)|(?P<kind>\w+)\s+)?name\b"
    r"|as\s+(?P<placeholder>\{\{?\s*\w+\s*\}?\}))"
    r"|\bgreeting\s+(?:that\s+)?(?:uses|using|with)\s+(?P<who2>\{\{?\s*\w+\s*\}?\}|(?:the\s+)?[\w -]{1,40}?)['’]s\s+"
    r"(?P<first2>first\s+)?name\b",
    re.IGNORECASE,
)


def _greeting_drafts(text: str, vocabulary: _Vocabulary) -> Iterator[_Draft]:
    """The greeting-by-name check, where the input that gives the name is the one the sentence names: a
    placeholder, "{who} first name", "{who} name" or the reader's own input ("the customer" of {customer})."""
    asked = _BY_NAME.search(text)
    if asked is None or _negation(text) is not None:
        return
    who = (asked.group("placeholder") or asked.group("who") or asked.group("who2")).strip()
    first = bool(asked.group("first") or asked.group("first2"))
    named = vocabulary.field_of(who) if who.startswith("{") else None
    # "the team by their team name" of {team_name}; then an input that can only be the reader's name: {first_name},
    # {name}
    kind = [f"{who} {asked.group('kind')} name", f"{asked.group('kind')} name"] if asked.group("kind") else []
    for phrase in ([f"{who} first name"] if first else []) + kind + [f"{who} name", who, "first name"]:
        named = named or vocabulary.input_named(phrase)
    named = named or ("name" if "name" in vocabulary.inputs else None)
    if named is None and who.lower() in {"them", "him", "her", "the reader", "the user", "the recipient"}:
        # "a member called {member_name}; greet them by first name": the one name the sentence gives
        given = [field for field in vocabulary.fields_in(text) if field.endswith("name")]
        named = given[0] if len(given) == 1 else None
    if named is not None:
        first_only = first and not named.endswith("first_name")  # {first_name} is the first name already
        yield library.greets_by_name_draft(named, first_name=first_only)


_LABEL: Final = r"(?:[\"“'‘`](?P<quoted>[^\"”'’`\n]{2,30})[\"”'’`]|(?P<caps>\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*\b))"
_MENTIONS: Final = (
    r"(?i:mentions?|mentioning|contains?|containing|includes?|including|refers?\s+to|reports?|describes?)"
)
#: A label the response must give where an input mentions one of a list of things: "if the message mentions severe
#: abdominal pain, heavy bleeding or shortness of breath, the label is URGENT_CLINICAL", "Anything mentioning a gas
#: smell, smoke or sparking is P1", 'Use "liability" if the report mentions an injury'.
_LABEL_RULES: Final = (
    re.compile(
        rf"\b(?i:if|when|whenever)\s+(?i:the\s+)?(?P<noun>[\w ]{{1,30}}?)\s+{_MENTIONS}\s+(?i:any\s+of\s+)?"
        rf"(?P<keys>[^.;:]+?),\s*"
        rf"(?i:then\s+)?(?i:(?:the\s+)?(?:label|category|priority|class|classification|tag|status)\s+(?:is|must\s+be|"
        rf"should\s+be)|(?:label|tag|classify|mark)\s+it\s+(?:as\s+)?|use|set\s+[\w ]{{1,20}}?\s+to)\s+{_LABEL}"
    ),
    re.compile(
        rf"\b(?i:anything|any\s+\w+|messages?|tickets?|emails?|reports?|requests?)\s+(?:that\s+)?{_MENTIONS}\s+"
        rf"(?P<keys>[^.;:]+?)\s+(?i:is|are|gets?|must\s+be|should\s+be)\s+(?i:labell?ed\s+|marked\s+|set\s+to\s+)?"
        rf"(?i:as\s+)?{_LABEL}"
    ),
    # "if the customer mentions eye pain or an eye injury, tell them to contact an eye doctor": whom to send them to
    re.compile(
        rf"\b(?i:if|when|whenever)\s+(?i:the\s+)?(?P<noun>[\w ]{{1,30}}?)\s+{_MENTIONS}\s+(?i:any\s+of\s+)?"
        rf"(?P<keys>[^.;:]+?),\s*(?i:then\s+)?(?i:tell|ask|advise|urge|direct|refer|send)\s+(?i:them|him|her|the\s+\w+)"
        r"\s+(?i:to\s+)?(?i:contact|call|see|visit|phone|ring|consult|speak\s+to|talk\s+to|report\s+(?:it\s+)?to|go\s+to)"
        r"\s+(?i:an?\s+|the\s+|their\s+|your\s+)?(?P<phrase>[a-z][a-z-]*(?:\s+[a-z][a-z-]*){0,2}?)"
        r"(?=\s*(?:[,.;]|\s+(?:or|and|if|in|for|as|straight|immediately|right|now|today)\b|$))"
    ),
    re.compile(
        rf"\b(?i:use\s+|label\s+|set\s+[\w ]{{1,20}}?\s+to\s+)?{_LABEL}\s+(?i:if|when|whenever)\s+(?i:the\s+)?"
        rf"(?P<noun>[\w ]{{1,30}}?)\s+{_MENTIONS}\s+(?i:any\s+of\s+)?(?P<keys>[^.;:]+?)"
        rf"\s*(?:[.;]|,?\s*(?i:otherwise)|$)"
    ),
)
#: Labels that say yes or no: a word a response writes for other reasons too.
_TRUTH_WORDS: Final = frozenset({"yes", "no", "true", "false", "y", "n"})


def _label_rule_drafts(text: str, vocabulary: _Vocabulary) -> Iterator[_Draft]:
    """The label-when-mentioned check: the things listed (whole phrases, without their articles) and the input
    the sentence names as the one that mentions them (all the inputs where it names none)."""
    for rule in _LABEL_RULES:
        found = rule.search(text)
        if found is None or re.search(r"\bonly\s+if\b", found.group(0), re.IGNORECASE):
            continue
        groups = found.groupdict()
        label = (groups.get("quoted") or groups.get("caps") or groups.get("phrase") or "").strip()
        if not label or label.lower() in _TRUTH_WORDS:
            continue
        if re.match(r"\s*both\b", found.group("keys"), re.IGNORECASE):
            continue  # "both clear praise and clear complaints": all of them together, which words cannot tell
        parts = re.split(r",\s*(?:or\s+|and\s+)?|\s+or\s+|\s+and\s+", found.group("keys"))
        keywords = [
            cleaned
            for part in parts
            if (cleaned := re.sub(r"^(?:an?|any|the|some)\s+", "", part.strip(" \"'“”"), flags=re.I))
            and len(cleaned.split()) <= 4
        ]
        noun = found.groupdict().get("noun")
        field = vocabulary.input_named(noun) if noun else None
        if keywords:
            yield library.labelled_when_mentioned_draft(keywords, label, [field] if field else [])
        return
    yield from _label_table_drafts(text, vocabulary.prompt)
    yield from _refused_label_drafts(text, vocabulary.prompt)


#: A value some cases never get: "Damp and mould are never routine", "Never mark gas leaks as low", "a safety risk
#: must never be P3".
_NEVER_LABEL: Final = re.compile(
    r"^(?:-\s*)?(?:(?P<keys>[\w ,/'-]{3,60}?)\s+(?:are|is|must|should|may|can)\s+never\s+(?:be\s+)?(?:marked\s+|"
    r"labell?ed\s+|classed\s+|classified\s+|rated\s+)?(?:as\s+)?|never\s+(?:mark|label|class|classify|rate|tag)\s+"
    r"(?P<keys2>[\w ,/'-]{3,60}?)\s+as\s+)[\"“'`]?(?P<label>[\w-]+)[\"”'`]?\s*[.;]?\s*$",
    re.IGNORECASE,
)
#: Words for an input's kind that a keyword does not need to name: "damp reports" is about damp.
_CASE_NOUNS: Final = re.compile(r"\s+(?:reports?|requests?|cases?|messages?|issues?|claims?|tickets?|emails?)$", re.I)


def _refused_label_drafts(text: str, prompt: str) -> Iterator[_Draft]:
    """The refused-when-mentioned check, where a value the prompt offers is one some cases never get."""
    found = _NEVER_LABEL.match(text.strip())
    if found is None:
        return
    label = found.group("label")
    offered = label in _offered_values(prompt) or re.search(
        rf"^\s*(?:[-*•]\s+|\d+[.)]\s+)?[\"“`]?{re.escape(label)}[\"”`]?\s*(?:\(|:|-|–)", prompt, re.MULTILINE
    )
    if not offered:
        return
    keys = found.group("keys") or found.group("keys2")
    keywords = [
        _CASE_NOUNS.sub("", cleaned)
        for part in re.split(r",\s*(?:or\s+|and\s+)?|\s+or\s+|\s+and\s+|/", keys)
        if (cleaned := re.sub(r"^(?:an?|any|the|some|all)\s+", "", part.strip(), flags=re.I))
        and len(cleaned.split()) <= 3
    ]
    if keywords:
        yield library.refused_when_mentioned_draft(keywords, label)


_ACTION: Final = (
    r"(?:(?:first|also|then|always|immediately|your\s+\w+\s+sentence\s+(?:must|should))\s+)*"
    r"(?:tell|ask|advise|urge|direct|refer|send|give|add|include|say|call|provide|share|quote|point|append|list|"
    r"write|put|end|start|mention)\b"
)
#: A case and what to give in it: "If they report a gas smell, first tell them to ... call ... 0800 111 999",
#: "For flooding or no electricity, also give our out-of-hours line ...", and a topic line "- Smell of gas: tell
#: them to call ..." or "Questions about tattoos or pregnancy: ... give the nurse line ...".
_LITERAL_RULES: Final = (
    re.compile(
        rf"\b(?i:if|when|whenever)\s+(?i:the\s+)?(?P<noun>[\w ]{{1,30}}?)\s+(?:{_MENTIONS}|(?i:asks?\s+about|talks?\s+"
        rf"about|says?))\s+(?i:any\s+of\s+)?(?P<keys>[^.;:]+?),\s*(?i:then\s+)?(?P<then>(?i:{_ACTION})[^\n]*)"
    ),
    re.compile(rf"^(?i:for)\s+(?P<keys>[^.;:{{}}]+?),\s*(?P<then>(?i:{_ACTION})[^\n]*)"),
    re.compile(rf"^(?P<keys>[A-Za-z][^.:{{}}\n]{{2,160}}?):\s*(?P<then>(?i:{_ACTION})[^\n]*)"),
)
#: An e-mail address and a web address, as a prompt gives them to pass on ("financial-ombudsman.org.uk" whole).
_EMAIL_OR_URL: Final = (
    r"(?P<email>[\w.+-]+@[\w-]+(?:\.[\w-]+)+)"
    r"|(?P<url>(?:https?://|www\.)[^\s,;)]+|\b[a-z0-9-]+\.(?:co\.uk|org\.uk|gov\.uk|com|org|net|gov|io)\b(?:/[^\s,;)]*)?)"
)
#: What such a rule gives word for word: a phone number after a verb or noun of calling, an e-mail address, a web
#: address, or a quoted line the sentence says to copy ("include the exact sentence "Spot recommended."").
_LITERALS: Final = re.compile(
    r"(?i:call|phone|ring|dial|text|line|number|helpline|hotline|on)\s+(?P<phone>\+?\d[\d ()-]{1,16}\d)(?![\d.,]\d)"
    rf"|{_EMAIL_OR_URL}"
    r"|(?i:word\s+for\s+word|verbatim|exactly|(?:the\s+)?exact\s+(?:sentence|line|phrase|words|wording|text))\s*:?\s*"
    r"[\"“](?P<line>[^\"”\n]{8,200})[\"”]"
)


#: Contact details a sentence gives to pass on: a phone number of nine or more digits in groups ("0800 023 4567",
#: "+44 20 7946 0018", "(555) 123-4567"), a web address, an e-mail address.
_CONTACT_LITERAL: Final = re.compile(
    r"(?<![\w.,/-])(?P<phone>\+?(?:\(\d{2,5}\)|\d{2,5})(?:[ -](?:\(\d{2,5}\)|\d{2,5})){1,4})(?![\w.,/-]?\d)"
    rf"|{_EMAIL_OR_URL}"
)
#: What asks every response to pass contact details on: "Always finish with ...", "give our helpline number".
_GIVE_ALWAYS: Final = re.compile(
    r"\b(?:always|must|every\s+(?:reply|response|letter|email|message))\b[^.]{0,40}?\b(?:give|include|finish|end|"
    r"close|add|mention|provide|share|list)\w*\b|^(?:[-*•]\s+)?(?:give|include|add|provide|share)\s+(?:our|the)\b",
    re.IGNORECASE,
)


def _contact_literal_drafts(text: str) -> Iterator[_Draft]:
    """The contact details every response passes on, where a sentence asks for them unconditionally ("Always
    finish with our complaints paragraph: ... (financial-ombudsman.org.uk, 0800 023 4567)")."""
    give = _GIVE_ALWAYS.search(text)
    # a condition before the verb makes it a case's ("If they smell gas, always give ..."); one after it is part of
    # what to write ("Always finish with our complaints paragraph: if they're unhappy they can ...")
    if give is None or _negation(text) is not None or _CONDITIONAL.search(text[: give.end()]):
        return
    literals = [
        found.group(0).rstrip(".")
        for found in _CONTACT_LITERAL.finditer(text)
        if not found.group("phone") or sum(ch.isdigit() for ch in found.group("phone")) >= 9
    ]
    if literals:
        yield library.gives_draft(list(dict.fromkeys(literals)))


def _literal_rule_drafts(text: str, vocabulary: _Vocabulary) -> Iterator[_Draft]:
    """The gives-when-mentioned check: what a case asks the response to give word for word (a number to call, an
    address, a line to copy), where the inputs mention one of the things the case lists."""
    for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z])", text):  # "Smell of gas: ... For flooding, ...": two cases
        yield from _literal_rule_draft(sentence, vocabulary)


def _literal_rule_draft(text: str, vocabulary: _Vocabulary) -> Iterator[_Draft]:
    for rule in _LITERAL_RULES:
        found = rule.search(text)
        if found is None:
            continue
        then = re.split(r"(?<=[.!?])\s+(?=[A-Z])", found.group("then"))[0]  # the case's own sentence
        literals = [
            next(v for v in match.groupdict().values() if v).strip().rstrip(".") for match in _LITERALS.finditer(then)
        ]
        if not literals:
            continue
        if re.search(r"\bor\b", then[then.find(literals[0]) + len(literals[0]) : then.rfind(literals[-1])]):
            literals = literals[:1]  # "call 999 or e-mail ...": either will do, and the first is the one it names
        keys = re.sub(r"\(([^()]*)\)", lambda m: ", " + _elided(m.group(1)), found.group("keys"))
        topics = []
        for group in re.split(r",\s*(?:or\s+|and\s+)?|;", keys):
            negated = re.match(r"\s*(?:or\s+|and\s+)?(?:no|without)\s+", group, re.IGNORECASE)
            # "a jump/dyno": either word is the case
            for part in re.split(
                r"\s+or\s+|\s+and\s+|(?<=[a-z])/(?=[a-z])", group[negated.end() :] if negated else group
            ):
                cleaned = re.sub(
                    r"^(?:(?:an?|any|the|some|questions?\s+about|no|without)\s+)+", "", part.strip(" \"'“”"), flags=re.I
                )
                denied = negated or re.match(r"\s*(?:no|without)\s", part, re.IGNORECASE)
                if cleaned and len(cleaned.split()) <= 5 and not _NO_KEYWORD.search(cleaned):
                    topics.append(f"no {cleaned}" if denied else cleaned)  # "no heating or hot water": no hot water

        if not topics:
            return
        noun = found.groupdict().get("noun")
        field = vocabulary.input_named(noun) if noun else None
        yield library.gives_when_mentioned_draft(topics, literals, [field] if field else [])
        return


def _elided(listed: str) -> str:
    """The cases a bracket lists, each a case of its own ("unwell (dizziness, fainting)"), with a modifier the
    first gives and the others leave out written into each: "broken lock, door or window" is a broken door, not
    any door."""
    items = [item.strip() for item in re.split(r",\s*(?:or\s+|and\s+)?|\s+or\s+|\s+and\s+", listed) if item.strip()]
    first = items[0].split() if items else []
    if len(first) == 2 and len(items) > 1 and all(len(item.split()) == 1 for item in items[1:]):
        items = [items[0], *(f"{first[0]} {item}" for item in items[1:])]
    return ", ".join(items)


#: A mapping line: "Fire, smoke or burning smell, gas smell -> security, immediate." (things, an arrow, the values
#: they take); and a glossary line: "WEAPONS - firearms, ammo, gun parts, suppressors" (a code, what it covers).
_ARROW_RULE: Final = re.compile(
    r"^(?:[-*•]\s+)?(?P<keys>[^>\n]{2,200}?)\s*(?:->|→|=>)\s*(?P<labels>[\w-]+(?:\s*,\s*[\w-]+){0,2})\s*(?:[.;]|$)"
)
_GLOSSARY_RULE: Final = re.compile(
    r"^(?:[-*•]\s+)?(?P<labels>[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*)\s*(?:-|–|—|:)\s+(?P<keys>[^.\n]{2,200}?)\s*\.?$"
)
#: A thing of such a list that no mention can show: a rest ("anything else"), a clock or a number range
#: ("Noise 22:00-07:00"), a circumstance ("noise during the day"), or a sentence rather than a thing.
_NO_KEYWORD: Final = re.compile(
    r"^(?:anything|everything|other|else|none|no\b)|\d|\b(?:during|before|after|while|unless|except|than|is|are|"
    r"was|were|asks?|wants?|says?|should|must|can|will|not|only|alone)\b",
    re.IGNORECASE,
)


def _label_table_drafts(text: str, prompt: str) -> Iterator[_Draft]:
    """The label-when-mentioned check from a mapping or glossary line. Its values must be ones the prompt offers
    as a field's values, or codes in capitals that a glossary of three or more such lines defines: an arrow to
    anything else is an instruction ("pricing questions -> link the pricing page"), and a capitalised line
    alone is a heading."""
    arrow = _ARROW_RULE.match(text.strip())
    glossary = None if arrow else _GLOSSARY_RULE.match(text.strip())
    found = arrow or glossary
    if found is None:
        return
    labels = [label.strip() for label in found.group("labels").split(",")]
    offered = _offered_values(prompt)
    if arrow and not all(label in offered or (label.isupper() and len(label) > 2) for label in labels):
        return
    if glossary and len(_GLOSSARY_LINES.findall(prompt)) < 3:
        return
    # "(AC, heating, TV)", "(WhatsApp, Venmo, PayPal)": examples of what comes before, things as the rest are
    examples = [inside for inside in re.findall(r"\(([^()]*)\)", found.group("keys")) if "," in inside]
    keys = ", ".join([re.sub(r"\([^()]*\)", "", found.group("keys")), *examples])
    keywords = [
        cleaned
        for part in re.split(r",\s*(?:or\s+|and\s+)?|\s+or\s+", keys)
        for alternative in _slash_alternatives(part.strip(" \"'“”"))
        if (cleaned := re.sub(r"^(?:an?|any|the|some|incl\.?|including)\s+", "", alternative, flags=re.I))
        and (len(cleaned) > 2 or cleaned.isupper())  # "TV", "AC"; not "it"
        and len(cleaned.split()) <= 3
        and not _NO_KEYWORD.search(cleaned)
        and not re.search(r"[<>{}\[\]]", cleaned)
    ]
    if len(keywords) >= (3 if glossary else 1):  # a glossary's code covers a list; two phrases may be a layout's
        for label in labels:
            yield library.labelled_when_mentioned_draft(keywords, label, [])


def _slash_alternatives(phrase: str) -> list[str]:
    """ "counterfeit/replica" is two things; "mirror grade/quality" is "mirror grade" and "mirror quality"."""
    if "/" not in phrase:
        return [phrase]
    first, *rest = [side.strip() for side in phrase.split("/")]
    stem = first.rsplit(" ", 1)[0] + " " if " " in first and all(" " not in side for side in rest) else ""
    return [first, *(stem + side for side in rest)]


_GLOSSARY_LINES: Final = re.compile(r"^(?:[-*•]\s+)?[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*\s*(?:-|–|—|:)\s+\S", re.MULTILINE)


def _offered_values(prompt: str) -> set[str]:
    """Values a prompt offers for a field: "department: front_desk | housekeeping | security", "trade - exactly one
    of: plumber, electrician, roofer" (three or more, each one token)."""
    values: set[str] = set()
    for line in prompt.splitlines():
        found = re.match(
            r"^\s*(?:[-*•]\s+)?[\w\" ]{1,30}\s*(?::|-|–)\s*(?:(?:exactly\s+)?one\s+of\s*:?\s*)?"
            r"(?P<values>[\w-]+(?:\s*[|,/]\s*[\w-]+){2,})\s*\.?\s*$",
            line,
        )
        if found is not None:
            values.update(value.strip() for value in re.split(r"[|,/]", found.group("values")))
    return values


#: A layout line whose label takes one of a few values in capitals: "DECISION: <APPROVE|REJECT|REFER>",
#: "DECISION: ALLOW | REMOVE | REVIEW", "- Address: PASS/FAIL/UNCLEAR - reason (Rule n)".
_LABELLED_CHOICE: Final = re.compile(
    r"^(?:[-*•]\s+|\d+[.)]\s+)?(?:\*\*)?(?P<label>[A-Za-z][\w &'-]{0,30}?)(?:\*\*)?\s*:\s*(?:\*\*)?[<\[`]?"
    r"(?P<values>[A-Z][A-Z0-9_-]+(?:\s*[|/]\s*[A-Z][A-Z0-9_-]+)+)[>\]`]?(?:\*\*)?\s*(?:$|[-—–(,:]\s*\S)"
)


#: A layout quoted inside a sentence: 'Start your answer with "LABEL: <URGENT|ROUTINE>".'
_QUOTED_LAYOUT: Final = re.compile(r"[\"“`](?P<layout>[^\"”`\n]{3,120})[\"”`]")


def _labelled_value_drafts(text: str) -> Iterator[_Draft]:
    """The labelled-value check, where a layout line, or a layout a sentence quotes, gives its label's values in
    capitals."""
    layouts = [text.strip(), *(quoted.group("layout").strip() for quoted in _QUOTED_LAYOUT.finditer(text))]
    for found in filter(None, map(_LABELLED_CHOICE.match, layouts)):
        values = [value.strip() for value in re.split(r"[|/]", found.group("values"))]
        yield library.labelled_value_draft(found.group("label").strip(), values)


#: A rule under an if-clause on an input's quoted value: 'If the deposit is "none", don't mention payment at all'.
_IF_VALUE: Final = re.compile(
    r"^if\s+(?:the\s+)?(?P<noun>[a-z][\w ]{1,30}?)(?:\s+is|(?<=\bit)'s)\s+[\"“](?P<value>[^\"”\n]{1,30})[\"”]\s*[,:]\s*"
    r"(?P<rule>[^.;]+[.;]?)",
    re.IGNORECASE,
)


#: An if-clause on a value alone, the input named by an earlier one: 'If "no", show only Total and do not mention VAT'.
_IF_OTHER_VALUE: Final = re.compile(
    r"^if\s+[\"“](?P<value>[^\"”\n]{1,30})[\"”]\s*[,:]\s*(?P<rule>[^.;]+[.;]?)", re.IGNORECASE
)


#: 'If the status says the membership is frozen, don't mention the offer': the same on a word of the input's value,
#: unquoted; not a state that is no word of it ("is empty", "is missing").
_IF_STATE: Final = re.compile(
    r"^if\s+(?:the\s+)?(?P<noun>[a-z][\w ]{1,30}?)\s+(?:is|says|shows|reads)\s+(?:that\s+)?"
    r"(?:(?:the\s+)?[a-z][\w ]{0,30}?\s+(?:is|was)\s+)?"
    r"(?!(?:empty|blank|missing|not|set|given|provided|present|available|unknown|unclear|null)\b)"
    r"(?P<value>[a-z][\w-]{1,20})\s*[,:]\s*(?P<rule>[^.;]+[.;]?)",
    re.IGNORECASE,
)


_GREATER: Final = r"higher|greater|more|larger|bigger|above|over|>"
_SMALLER: Final = r"lower|less|fewer|smaller|below|under|<"
#: 'If the rating is 3 or lower, apologise', 'If their position is higher than 20, mention ...': a rule for the
#: examples whose input's number compares so with the bound.
_IF_NUMBER: Final = re.compile(
    rf"^(?:if|when)\s+(?:the\s+)?(?P<noun>[a-z][\w ]{{1,30}}?)\s*(?:\b(?:is|are|was|reads)\s+)?"
    rf"(?:(?P<above>(?:{_GREATER})(?:\s+than)?)|(?P<below>(?:{_SMALLER})(?:\s+than)?)|(?P<least>at\s+least|>=|≥)"
    rf"|(?P<most>at\s+most|<=|≤))?\s*(?:[£$€]\s?)?(?P<bound>\d{{1,3}}(?:,\d{{3}})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    rf"(?:\s+or\s+(?:(?P<or_above>{_GREATER}|up)|(?P<or_below>{_SMALLER})))?\s*,\s*(?P<rule>[^.;]+[.;]?)",
    re.IGNORECASE,
)


#: A rule its condition follows, to the clause's end: 'include "budget_exceeds_cap" if the amount requested is above
#: £5,000, otherwise an empty list', read as "If the amount requested is above £5,000, include ...". The rule
#: starts after the last sentence, colon or semicolon break before it outside quotes (a schema line's key and type
#: stay out; 'Start with "URGENT:" when ...' is one rule).
_TRAILING_IF: Final = re.compile(
    r"(?:^|[.;:]\s+)(?P<rule>(?:[^.;:\"“”]|\"[^\"\n]*\"|“[^”\n]*”)+?)\s+(?:only\s+)?(?:if|when)\s+"
    r"(?P<condition>(?:[^.;,\n]|(?<=\d),(?=\d{3}))+?)\s*(?:,\s*(?:otherwise|else)\b[^.;]*)?[.;]?\s*$",
    re.IGNORECASE,
)


def _number_case(clause: re.Match[str]) -> tuple[str, float] | None:
    """The comparison an if-clause on a number states: ("<=", 3.0) of "is 3 or lower"; None without one."""
    if clause.group("least") or clause.group("or_above"):
        op = ">="
    elif clause.group("most") or clause.group("or_below"):
        op = "<="
    elif clause.group("above"):
        op = ">"
    elif clause.group("below"):
        op = "<"
    else:
        return None
    return op, float(clause.group("bound").replace(",", ""))


def _exact_count(candidate: Candidate) -> tuple[Any, ...] | None:
    """What an exact count candidate counts ("exactly five lines"): its unit, part and per-item scope."""
    check = candidate.check
    if not check or check.get("family") != "count" or check.get("min") is None or check.get("min") != check.get("max"):
        return None
    return check["unit"], check.get("section"), check.get("per")


def _without_superseded(candidates: list[Candidate]) -> list[Candidate]:
    """Without an earlier version's exact count that the newest version states again with another number: the
    prompt now asks for its own ("exactly these five lines" where "these four lines" was), and no output can
    meet both. A limit the newest version changed or dropped stays (a removed limit may be a relaxed one,
    which the labelled examples decide)."""
    current = {_exact_count(c) for c in candidates if c.removed_in is None} - {None}
    return [c for c in candidates if c.removed_in is None or _exact_count(c) not in current]


#: A channel a rule is given for, as a list item's label ("- chat: ...", "- SMS: ..."), and the input that names the
#: channel of each example.
_CHANNEL_NAME: Final = re.compile(
    r"(?:chat|live chat|e-?mail|sms|text|push|whatsapp|web|app|in-app|phone|voice|letter|post)", re.IGNORECASE
)
_CHANNEL_INPUT: Final = re.compile(r"^(?:channel|medium|contact_channel|reply_channel|delivery_channel)$")
#: A list item's label written as a code ("OUR_FAULT", "PRE_EXISTING"): a value some input carries, not a heading.
_CODE_LABEL: Final = re.compile(r"[A-Z][A-Z0-9]{2,}(?:_[A-Z0-9]+)*")
#: An input that carries a code: "finding_code", "exception_type", "hold_status".
_CODED_INPUT: Final = re.compile(r"(?:^|_)(?:code|type|status|category|kind|class|outcome|decision|finding|result)$")


#: The case a rule is given for: one value of an input ("X/Twitter"), or a comparison of its number (">", 20).
_Case = str | tuple[str, float]


def _value_guard(instruction: Instruction, prompt: str, vocabulary: _Vocabulary) -> tuple[str, _Case, str, str] | None:
    """(input, value, rule, before) for a rule given for one value of an input: a list item ("- X/Twitter: the
    whole post must be 280 characters or less" under "Match the platform:", in a prompt with "Platform:
    {platform}"; the list's introduction names the input, the item's label is no part of the response), or an
    if-clause on the input's quoted value ('If the deposit is "none", don't mention payment at all'), which may
    follow a sentence of the same item that asks something of every response (``before``; "" when none)."""
    if instruction.removed_in is not None:
        return None
    cleaned = _clean(instruction.text)
    before = ""
    clause = _IF_VALUE.match(cleaned) or _IF_STATE.match(cleaned)  # 'If the deposit is "none", don't mention ...'
    later = re.search(r"(?<=[.;])\s+(?=if\b)", cleaned, re.IGNORECASE) if clause is None else None
    if later is not None:  # '2. First paragraph: state the date. If the date is "none scheduled", don't mention ...'
        clause = _IF_VALUE.match(cleaned[later.end() :])
        before = cleaned[: later.start()]
        # 'if VAT registered is "yes", show Subtotal, VAT and Total. If "no", show only Total and do not mention VAT':
        # the other value of the input the sentence's first if-clause names
        elided = _IF_OTHER_VALUE.match(cleaned[later.end() :]) if clause is None else None
        first = _IF_NOUN.search(before) if elided else None
        if elided and first:
            noun = first.group("noun").strip()
            field = vocabulary.input_named(noun) or vocabulary.input_named(f"the {noun}")
            if field:
                return field, elided.group("value").strip(), elided.group("rule").strip(), ""
    conditioned, trailing = cleaned, None
    if clause is None and not re.match(r"(?:if|when)\b", cleaned, re.IGNORECASE):
        trailing = _TRAILING_IF.search(cleaned)
    if trailing is not None:  # "<rule> if <condition>": read as "If <condition>, <rule>."
        conditioned = f"If {trailing.group('condition')}, {trailing.group('rule')}."
        before = cleaned[: trailing.start("rule")].strip()
        clause = _IF_VALUE.match(conditioned) or _IF_STATE.match(conditioned)
    numbered = _IF_NUMBER.match(conditioned) if clause is None else None
    comparison = _number_case(numbered) if numbered is not None else None
    if numbered is not None and comparison is not None:
        compared = vocabulary.input_named(numbered.group("noun").strip())
        rule = numbered.group("rule").strip()
        return (compared, comparison, rule, before if trailing is not None else "") if compared else None
    if clause is not None:
        noun = clause.group("noun").strip()
        if noun.lower() == "it":
            preceding = prompt[: instruction.start or max(prompt.find(instruction.text), 0)]
            if later is not None:  # "If an expected reopening time is given, ... If it is "unknown", ...": one unit
                preceding += cleaned[: later.start()]
            field = _input_it_names(preceding, vocabulary)
        else:
            field = vocabulary.input_named(noun) or vocabulary.input_named(f"the {noun}")
        return (field, clause.group("value").strip(), clause.group("rule").strip(), before) if field else None
    headed = _case_heading_over(prompt, instruction.text, vocabulary)
    if headed is not None:  # 'No emojis in email.' under 'Format for channel "email":'
        return (*headed, cleaned, "")
    intro = _list_intro(prompt, instruction.text)
    label = re.match(r"([A-Za-z][\w /&'+.-]{0,30}?)\s*:\s+(?=\S)", cleaned)
    if intro is None or label is None or _RULE_LABELS.search(label.group(1).lower()):
        return None
    named = [
        field
        for field in vocabulary.inputs
        if re.search(rf"\b{re.escape(field.replace('_', ' '))}s?\b", intro, re.IGNORECASE)
    ]
    # "- chat: start with "Hi", under 90 words.", "- SMS channel: suggested_first_reply under 320 characters."
    channel = re.sub(r"\s+(?:channel|messages|replies)$", "", label.group(1).strip(), flags=re.IGNORECASE)
    if not named and _CHANNEL_NAME.fullmatch(channel):
        named = [field for field in vocabulary.inputs if _CHANNEL_INPUT.search(field)]  # of "Channel: {channel}"
    if not named and _CODE_LABEL.fullmatch(label.group(1).strip()):
        # "- PRE_EXISTING: ... do not offer money" under "How to decide:", in a prompt whose one coded input is
        # "Technician finding code: {finding_code}": the case is that input's value
        named = [field for field in vocabulary.inputs if _CODED_INPUT.search(field)]
    if len(named) != 1 or _has_section(prompt, label.group(1).lower()):
        return None
    if _CHANNEL_INPUT.search(named[0]) and _CHANNEL_NAME.fullmatch(channel):
        return named[0], channel, cleaned[label.end() :], ""
    case = re.sub(r"^(?:for|if|when|on|in)\s+", "", label.group(1).strip(), flags=re.IGNORECASE)  # "- For LinkedIn:"
    return named[0], case, cleaned[label.end() :], ""


#: A line that opens a block of rules for one value of an input: 'Format for channel "email":', 'Rules when the tier
#: is "gold":'.
_CASE_HEADING: Final = re.compile(
    r"\s*(?:#{1,6}\s*)?\**(?:format|rules?|layout|template|instructions?)\s+(?:for|when)\s+(?:the\s+)?"
    r"(?P<noun>[a-z][\w ]{0,20}?)\s+(?:is\s+)?[\"“'‘](?P<value>[^\"”'’\n]{1,30})[\"”'’]\s*\**:\**\s*",
    re.IGNORECASE,
)


def _case_heading_over(prompt: str, sentence: str, vocabulary: _Vocabulary) -> tuple[str, str] | None:
    """(input, value) where the sentence sits in a block headed by a line that gives its rules for one value of an
    input ('Format for channel "slack":' over "No subject line in Slack, and at most one emoji."), in a prompt with
    that input ("Channel: {channel}"); the block runs to the next blank line."""
    at = prompt.find(sentence.strip())
    if at < 0:
        return None
    for line in reversed(re.split(r"\n\s*\n", prompt[:at])[-1].split("\n")[:-1]):
        heading = _CASE_HEADING.fullmatch(line)
        if heading is not None:
            field = vocabulary.input_named(heading.group("noun")) or vocabulary.input_named(
                f"the {heading.group('noun')}"
            )
            return (field, heading.group("value").strip()) if field else None
    return None


#: An if-clause on something the sentence names: 'If the boil-water advisory is "yes"', "... if talent pool opt-in is
#: "yes"".
_IF_NOUN: Final = re.compile(
    r"\b(?:if|when)\s+(?:the\s+|an?\s+)?(?P<noun>[a-z][\w -]{1,30}?)\s+(?:is|are|was|says|shows|reads)\b", re.IGNORECASE
)


def _input_it_names(before: str, vocabulary: _Vocabulary) -> str | None:
    """The input an if-clause's "it" stands for, from the text before it in its paragraph: the nearest earlier
    if-clause's input ('If the boil-water advisory is "yes", ... If it is "no", ...'; 'Only talk about the future if
    talent pool opt-in is "yes". ... If it's "no", ...'), else the input its line opens with ('Estimate status:
    {estimate_status}. If it's "provisional", ...'), else the last one its line gives."""
    paragraph = re.split(r"\n\s*\n", before)[-1]
    for clause in reversed(list(_IF_NOUN.finditer(paragraph))):
        noun = clause.group("noun").strip()
        if noun.lower() == "it":
            continue
        # "an expected reopening time" of "Expected reopening: {expected_reopen}": the label without its last word
        for named in dict.fromkeys([noun, noun.rsplit(" ", 1)[0]]):
            if field := vocabulary.input_named(named) or vocabulary.input_named(f"the {named}"):
                return field
    line = before.rsplit("\n", 1)[-1]
    opening = re.match(r"\s*(?:[-*•]\s+)?[A-Za-z][\w /'-]{0,30}:\s*\{(\w+)\}", line)
    given = [opening.group(1)] if opening else re.findall(r"\{(\w+)\}", line)[-1:]
    return given[0] if given and given[0] in vocabulary.inputs else None


#: How a comparison reads in a check's name: "for_rating_at_most_3".
_COMPARISON_WORDS: Final = {"<": "below", "<=": "at_most", ">": "above", ">=": "at_least"}


def _guarded(draft: _Draft, field: str, case: _Case) -> _Draft:
    """The draft as a rule for examples whose input ``field`` is ``case`` alone (others: not applicable)."""
    if isinstance(case, tuple):  # a comparison of the input's number
        op, bound = case
        named, said = library.slug(f"{field} {_COMPARISON_WORDS[op]} {bound:g}", 30), f"{field} {op} {bound:g}"
        guard = f"checks.applies_when_number(example, {library.literal(field)}, {library.literal(op)}, {bound!r})"
        when: dict[str, Any] = {"input": field, "op": op, "bound": bound}
    else:
        named, said = library.slug(case, 20), f"{field} is {case}"
        guard = f"checks.applies_when(example, {library.literal(field)}, {library.literal(case)})"
        when = {"input": field, "value": case}
    return dataclasses.replace(
        draft,
        slug=f"{draft.slug}_for_{named}",
        description=f"When {said}: {draft.description[0].lower()}{draft.description[1:]}",
        expression=f"{guard} and ({draft.expression})",
        check=None if draft.check is None else {**draft.check, "when": when},
    )


def _equivalence_key(expression: str) -> str:
    """Expressions that compute the same verdict map to one key: case and spacing aside, and a one-phrase
    ``contains_any`` is ``contains_phrase``."""
    key = re.sub(r"\s+", " ", expression.strip().lower())
    return re.sub(r"checks\.contains_any\(response, \[('[^']*')\]\)", r"checks.contains_phrase(response, \1)", key)


def _provenance(instruction: Instruction) -> str:
    if instruction.removed_in is None:
        return instruction.text.strip()
    how = "reworded" if instruction.reworded else "removed"
    return f"{instruction.text.strip()} [{how} in v{instruction.removed_in}]"


def _serves(candidate: Candidate, instruction: Instruction) -> Candidate:
    """The candidate, now also serving ``instruction``'s sentence; a current sentence clears ``removed_in``."""
    served = candidate.sentences or (_provenance_of(candidate),)
    line = _provenance(instruction)
    if line in served:
        return candidate
    removed_in = candidate.removed_in if instruction.removed_in is not None else None
    return dataclasses.replace(candidate, sentences=(*served, line), removed_in=removed_in)


def _provenance_of(candidate: Candidate) -> str:
    if candidate.removed_in is None:
        return candidate.sentence
    how = "reworded" if " reworded in v" in candidate.description else "removed"
    return f"{candidate.sentence} [{how} in v{candidate.removed_in}]"


def _candidate(draft: _Draft, instruction: Instruction, taken: dict[str, int]) -> Candidate:
    description = draft.description
    if instruction.removed_in is not None:
        how = "reworded" if instruction.reworded else "removed"
        description += (
            f" From an instruction {how} in v{instruction.removed_in} (a removed limit may be a relaxed one:"
            " keep this check only if the requirement still holds)."
        )
        draft = dataclasses.replace(draft, description=description)
    base = "assert_" + _slug(draft.slug, 56)
    taken[base] = taken.get(base, 0) + 1
    name = base if taken[base] == 1 else f"{base}_{taken[base]}"
    return Candidate(
        name=name,
        category=draft.category,
        sentence=instruction.text.strip(),
        version=instruction.version,
        synthesizer=NAME,
        description=draft.description,
        expression=draft.expression,
        check=draft.check,
        asks_llm=draft.asks_llm,
        removed_in=instruction.removed_in,
    )


#: The types a schema written as "key: type, ..." lines gives its keys.
_SCHEMA_TYPES: Final = r"(?:string|str|text|integer|int|number|float|boolean|bool|list|array|object)"


#: How a part's description opens when it sizes or shapes the part: "under 70 characters", "one message", "a short
#: list", "2-3 sentences".
_PART_SHAPE: Final = (
    r"(?:under|over|at\s+most|max(?:imum)?|up\s+to|no\s+more\s+than|exactly|between|one|two|three|four|five|"
    r"a\s+(?:short|single|brief|one-line|bulleted|numbered)|short|brief|plain|\d)\b"
)


def _has_section(prompt: str, noun: str) -> bool:
    """Whether the prompt gives the output a section named ``noun`` ("add a summary section", "## Summary"), or
    a key of the JSON it asks for (``Answer in JSON with the keys "title" and "highlights"``)."""
    name = re.escape(noun)
    return noun.lower() in _listed_headings(prompt) or bool(
        re.search(rf"\b{name}[\"”'`]?\s+section\b|\bsection\s+(?:about|on|for|called|named|titled)\s+(?:the\s+)?[\"“'`]?{name}\b",
                  prompt, re.IGNORECASE)
        or re.search(rf"^\s*(?:#+\s*|\*\*)?{name}\s*(?:\*\*)?:?(?:\*\*)?\s*$", prompt, re.IGNORECASE | re.MULTILINE)
        # an answer format's line: "Title: <title>", "Summary: [summary]"
        or re.search(rf"^\s*{name}\s*:\s*(?:<[^>\n]*>|\[[^\]\n]*\]|\{{[^}}\n]*\}})\s*$", prompt, re.I | re.MULTILINE)
        or (re.search(r"\bjson\b", prompt, re.IGNORECASE)
            and re.search(rf"[\"“'`]{name}[\"”'`]", prompt, re.IGNORECASE))
        or re.search(rf"<{name}>[^<]*</{name}>", prompt, re.IGNORECASE)  # "inside <summary></summary>"
        or re.search(rf"[`\"“']#+\s*{name}[`\"”']", prompt, re.IGNORECASE)  # "these sections: `### Summary`, ..."
        # "these level-3 sections, in this order: ### Highlights, ### Bug fixes"
        or re.search(rf"(?:^|[\s,:(])#{{1,6}}\s*{name}(?=[\s,.;:)]|$)", prompt, re.IGNORECASE | re.MULTILINE)
        or re.search(rf"[`\"“']{name}:[`\"”']", prompt, re.IGNORECASE)  # 'its label on a line of its own ("X:")'
        # a bold label the output uses: "Use exactly these bold labels: **Date:**, **Severity:**"
        or re.search(rf"\*\*{name}:?\*\*:?", prompt, re.IGNORECASE)
        # a line of a "Key: value" list the prompt spells out: "Fault: what was wrong, max 15 words"
        or (re.search(r"\bkey\s*:\s*value\b", prompt, re.IGNORECASE)
            and re.search(rf"^\s*(?:[-*•]\s*)?{name}\s*:", prompt, re.IGNORECASE | re.MULTILINE))
        # a key written in snake_case in a prompt that asks for JSON: "keys in this order: customer_name, ..."
        or ("_" in noun and re.search(r"\bjson\b", prompt, re.IGNORECASE)
            and re.search(rf"(?<![\w-]){name}(?![\w-])", prompt, re.IGNORECASE))
        # a schema's line in a prompt that asks for JSON: "- summary: string, at most 15 words"
        or (re.search(r"\bjson\b", prompt, re.IGNORECASE)
            and re.search(rf"^\s*(?:[-*•]\s*)?{name}\s*:\s*{_SCHEMA_TYPES}\b", prompt, re.I | re.MULTILINE))
        # a part of the output named in capitals at a line's start and sized or shaped there: "WEB TITLE: under 70
        # characters", "SMS: one message" (not an input's label, "MESSAGE: {message}", a class's definition, "WARM:
        # the lead is interested", nor a warning, "IMPORTANT: Keep it UNDER 80 WORDS")
        or (len(noun) >= 2 and re.search(rf"^\s*{re.escape(noun.upper())}\s*:\s*{_PART_SHAPE}", prompt, re.MULTILINE))
    )  # fmt: skip


_UNIT_ALTERNATION: Final = "|".join(sorted(map(re.escape, set(_UNITS) - _BANNED_ONLY), key=len, reverse=True))
#: What bans an element ahead of it: a negation, a verb that takes it out ("REMOVE emojis", "omit links"), or the
#: alternative it replaces ("in short paragraphs rather than bullet points").
_BAN_VERBS: Final = (
    r"don't|do not|never|avoid|remove|omit|eliminate|exclude|strip(?: out)?|leave out|get rid of|rather than|instead of"
)
#: Verbs a ban on a kind of thing takes besides "use": "do not mention commit hashes", "never quote phone numbers".
_MENTION_VERBS: Final = (
    r"mention(?:s|ed|ing)?|quot(?:e[sd]?|ing)|cit(?:e[sd]?|ing)|giv(?:e[sn]?|ing)|shar(?:e[sd]?|ing)|"
    r"reveal(?:s|ed|ing)?|repeat(?:s|ed|ing)?|cop(?:y|ies|ied|ying)"
)
#: One thing of a kind a count finds, named with its article after a ban's verb ("Never write a live URL or email
#: address", "never put a link in the message"): with the article only, as "do not link to competitors" bans none.
_ONE_OF_A_KIND: Final = (
    r"(?:url|link|hyperlink|email address|e-mail address|phone number|telephone number|card or account number|"
    r"card number)"
)
#: A ban on kinds named before it in the sentence: "Customers often paste full card numbers, passwords ... - never
#: copy those into the note".
_BAN_ON_THOSE: Final = re.compile(
    rf"\b(?:{_BAN_VERBS})\s+(?:{_MENTION_VERBS}|use|include|add|write|put)\s+(?:any\s+of\s+)?(?:those|these|them)\b"
)
_STRUCTURAL: Final = (
    "bullet points|bullet point|bullets|hashtags|hashtag|emojis|emoji|headings|headers|code blocks|code fences|links|"
    "urls|hyperlinks|bold formatting|bold text|boldface|bolding|bold|fences|backticks|phone numbers|telephone numbers|"
    "email addresses|e-mail addresses|emails|"
    "am/pm times|am/pm|commit hashes|commit hash|commit ids|commit shas|shas|"
    "drug doses|medication doses|dose amounts|dosages|dosage|doses|card or account numbers|card and account numbers|"
    "card numbers|card number"
)


#: Verbs for what a response opens and what it closes with ("begin your answer with", "finish with").
_OPENING: Final = "start|begin|open"
_CLOSING: Final = "end|finish|close|conclude"
#: Not the "no" of "yes/no questions" or "yes or no questions", a kind of question rather than none of them.
_NOT_YES_NO: Final = r"(?<!yes/)(?<!yes-)(?<!yes or )"


@lru_cache(maxsize=64)
def _count_patterns(number: str) -> tuple[tuple[str, re.Pattern[str]], ...]:
    """The count sentences' patterns for a prompt's vocabulary of numbers (its placeholders among them),
    compiled once: every instruction of the prompt is matched against the same ones."""
    units = _UNIT_ALTERNATION
    # "100 words", "three short bullet points"; not "two newline characters", "two more sentences"; and
    # "one of the sentences must use the fact" picks one out of them: no count either
    # and "one per line", "two per slide": a rate, not a total of lines or slides
    qualifier = rf"(?:\s+(?!(?:{_OTHER_THINGS}|of|per)\b)[a-z\-]+){{0,2}}?"
    patterns: list[tuple[str, str]] = [
        ("range", rf"\bbetween\s+({number})\s+and\s+({number}){qualifier}\s+({units})\b"),
        ("range", rf"\b({number})\s*(?:-|–|to|or\b)\s*({number}){qualifier}\s+({units})\b"),  # "one or two"
        ("at_most", rf"\b(?:{_AT_MOST})\s+(?:than\s+)?~?\s*({number}){qualifier}\s+({units})\b"),  # "max ~20 words"
        # not "no fewer than 3 paragraphs", "not less than": at least, read below
        ("below", rf"(?<!\bno\s)(?<!\bnot\s)\b(?:{_BELOW})\s+({number}){qualifier}\s+({units})\b"),
        ("at_least", rf"\b(?:{_AT_LEAST})\s+({number}){qualifier}\s+({units})\b"),
        ("above", rf"\b(?:{_ABOVE})\s+({number}){qualifier}\s+({units})\b"),
        (
            "at_most",
            rf"\b({number}){qualifier}\s+({units})\s+(?:maximum|max\b\.?|at most|at the most|or less|or fewer|tops)",
        ),
        ("at_least", rf"\b({number}){qualifier}\s+({units})\s+(?:minimum|min\b\.?|at least|or more)"),
        ("at_least", rf"\b({number})\s+or\s+more{qualifier}\s+({units})\b"),  # "one or more hashtags"
        ("at_most", rf"\b({number})\s+or\s+(?:fewer|less){qualifier}\s+({units})\b"),  # "three or fewer tips"
        ("about", rf"\b(?:{_ABOUT})\s+({number}){qualifier}\s+({units})\b"),
        # "list at least three specific warning signs as bullet points": what is listed, counted as bullets
        ("at_least", rf"\b(?:{_AT_LEAST})\s+({number})\s+(?:[a-z-]+\s+){{1,4}}?as\s+(bullet points|bullets)\b"),
        (
            "at_most",
            rf"\b(?:{_AT_MOST})\s+(?:than\s+)?({number})\s+(?:[a-z-]+\s+){{1,4}}?as\s+(bullet points|bullets)\b",
        ),
        (  # "Limit the steps to at most 8": the unit named first, the bound after it
            "unit_first",
            rf"\b(?:limit|keep|restrict|cap)(?:ed|s)?\s+(?:the\s+|your\s+|its\s+)?(?:number of\s+)?({units})\s+"
            rf"(?:to|at)\s+(?:(?:{_AT_MOST})\s+)?({number})(?=\s*(?:[.,;:!?)]|$|or (?:fewer|less)\b|at most\b|max))",
        ),
        ("unit_first", rf"^({units})\s*:\s*(?:{_AT_MOST})\s*({number})\b"),  # "Hashtags: max 5, at the end."
        ("hyphenated", rf"\b({number})-({units})\b"),  # "a 3-sentence summary", "a 100-word blurb"
        # "no questions", not "yes/no questions" or "yes or no questions" (a kind of question)
        (
            "none",
            rf"{_NOT_YES_NO}\b(?:no|without any|without|zero)\s+(?:`{{3}}\s+)?({units}|{_STRUCTURAL})\b",
        ),  # "no ``` fences"
        # "do not wrap the JSON in code fences", "never put it inside backticks"
        (
            "none",
            r"\b(?:don't|do not|never)\s+(?:wrap|enclose|put|place|format)\b[^.]{0,40}?\b(?:in|with|inside)\s+"
            r"(?:any\s+)?(?:triple\s+)?(code fences|code blocks|backticks)\b",
        ),
        (
            "none",
            rf"\b(?:{_BAN_VERBS})\s+(?:use|include|add|using|including|adding|{_MENTION_VERBS})?\s*(?:any\s+|all\s+)?"
            rf"(?:(?:full|complete|whole)\s+(?=card))?({_STRUCTURAL})\b",  # "full card numbers", not "full links"
        ),
        (  # "Never write a live URL or email address in any field": one of a kind, any of them
            "none",
            rf"\b(?:{_BAN_VERBS})\s+(?:use|include|add|write|put|insert|paste|{_MENTION_VERBS})\s+(?:a|an|any)\s+"
            rf"(?:(?:live|clickable|working|real|full|raw|direct)\s+)?({_ONE_OF_A_KIND})\b",
        ),
        # "Emojis are not allowed.", "hashtags are forbidden": a kind refused by name, nothing counted before it
        (
            "none",
            rf"(?<![\w\s])\s*(?:any\s+|all\s+)?({_STRUCTURAL})\s+(?:are|is)\s+(?:not\s+(?:allowed|permitted)"
            rf"|never\s+(?:allowed|permitted)|forbidden|prohibited|banned)\b",
        ),
        # "List exactly three topics": the things listed are a list's items, whatever they are called
        (
            "listed",
            rf"\blist\s+(?:the\s+)?(?:(?:exactly|only|precisely)\s+)?({number})\s+(?!(?:{units})\b)((?:[a-z]+\s+)?[a-z]+s)\b",
        ),
        # not \b: a placeholder count ("in {n} bullet points") starts with a brace
        ("exact", rf"(?<![\w-]){_NOT_YES_NO}(?:exactly\s+|only\s+|precisely\s+)?({number}){qualifier}\s+({units})\b"),
    ]
    return tuple((kind, re.compile(pattern)) for kind, pattern in patterns)


#: Contractions refused: "Do not use contractions", "no contractions", "avoid contractions (write "do not")".
_NO_CONTRACTIONS: Final = re.compile(
    r"\b(?:no|avoid|without|never\s+use|(?:do\s+not|don't)\s+use)\s+(?:any\s+)?contractions\b"
)
#: A text asked for in the third person ("write it in the third person", "third-person bio"), not one that
#: speaks of a third person ("refer to the third person in the photo").
_THIRD_PERSON: Final = re.compile(
    # "Write in the past tense and the third person": the voice after a tense
    r"\b(?:in|from)\s+(?:the\s+)?(?:[a-z]+\s+tense\s+and\s+(?:in\s+)?(?:the\s+)?)?third[- ]person\b"
    r"(?!\s+(?:in|on|at|who|from)\b)|\bthird[- ]person\s+"
    r"(?:only|throughout|bio|biography|voice|narrat\w+|perspective|point of view|profile|summary|description)\b"
)
#: Another part after a count, in the same sentence ("..., then exactly one line of action"): the count is of the
#: part before it.
_THEN_ANOTHER_PART: Final = re.compile(
    r"[^.;:\n]*?\b(?:then|followed by)\s+(?:(?:exactly|only)\s+)?(?:a|an|one|two|three|four|five|\d+)\s+(?:[\w-]+\s+)?"
    r"(?:lines?|sentences?|paragraphs?|questions?|lists?|bullets?|tables?|words?)\b"
)
#: A noun a number names one of ("hint 1", "step 2", "option 3"): the number that follows is no count.
_NUMBER_LABEL: Final = re.compile(
    r"\b(?:hint|step|option|part|level|question|item|tweet|slide|day|week|round|phase|chapter|page|version|task|"
    r"rule|table|figure|room|gate|route|lane|seat|stage|grade|year|episode|season|act|scene|track|tier)\s+$"
)
#: Times asked for on a 24-hour clock: none may be written with am or pm.
_TWENTY_FOUR_HOUR: Final = re.compile(
    r"\b(?:24[- ]?hours?|24h|twenty-four-hour)\s+(?:format|clock|time|times|notation)\b"
)


#: Labels that say what a rule is about rather than name a part of the response ("Length: under 100 words").
_RULE_LABELS: Final = re.compile(
    r"(?:^|\s)(?:tone|voice|length|size|style|format|formatting|language|rules?|constraints?|requirements?|important|"
    r"nb|output|limits?|word\s+count|guidelines?|instructions?|remember|critical|task|goal|scope|audience|"
    r"reminder|overall|total|everything|also|response|answer|reply|structure|layout|general|content|never|always|"
    r"do|don't|avoid|must|should)$"
    # "Note:", "Important note:" remark on the rules; "Officer note:", "Coach's note:" name a part of the answer
    r"|^(?:(?:an?|one|important|please|quick|final|side)\s+)?notes?$"
)
#: A line that opens with a label: "Why: 1-2 plain sentences.", "- summary: 2-3 sentences", "1. Headline: ...".
_LABEL_OPENING: Final = re.compile(r"^(?:optional\s+)?[\"“]?([a-z][\w /&'-]{0,30}?)[\"”]?\s*:\s+\S")
_LAYOUT_LINE: Final = re.compile(r"^\s*(?:[-*•]\s+|\d+[.)]\s+)?(?:\*\*)?[A-Za-z][\w /&'-]{0,30}?(?:\*\*)?\s*:\s*\S")


def _layout_label(text: str, prompt: str) -> str | None:
    """The part a line names by its opening label, where the label names a part of the response: one of the
    prompt's sections or keys, a part such as a headline, or one of a run of "Label: what it holds" lines that
    lay the answer out ("URGENCY: ...", "Why: 1-2 plain sentences.", "Next step: ..."). "" for a part the line
    calls optional; None when the label says what a rule is about ("Length: under 100 words") or names no part."""
    lowered = text.lower()
    label = _LABEL_OPENING.match(lowered)
    if label is None or label.group(1) in _WHOLE_RESPONSE - {"summary"}:
        return None
    # "Notes:" remarks on the rules, except as one of a run of parts that lay the answer out (below)
    remark = _RULE_LABELS.search(label.group(1)) is not None
    if remark and label.group(1).strip() != "notes":
        return None
    name = label.group(1).strip()
    if re.match(r"(?:output|return|reply|respond|answer|write|give|use|keep|include|start|end|format)\b", name):
        return None  # "Output a single word: the category": an instruction before its colon, not a part's name
    lines = prompt.splitlines()
    at = next((i for i, line in enumerate(lines) if text[:40] in line), None)
    block = []  # the other lines of its paragraph: a run of labelled parts lays the answer out
    if at is not None:
        start, end = at, at
        while start > 0 and lines[start - 1].strip():
            start -= 1
        while end + 1 < len(lines) and lines[end + 1].strip():
            end += 1
        block = lines[start:at] + lines[at + 1 : end + 1]
    in_a_run = any(
        _LAYOUT_LINE.match(line) and not _RULE_LABELS.search(line.split(":")[0].lower().strip(" -*•")) for line in block
    )
    if remark and not in_a_run:
        return None
    json_key = re.fullmatch(r"[a-z][a-z0-9_]*", name) is not None and re.search(r"\bjson\b", prompt, re.I) is not None
    if not (name in _PARTS or _has_section(prompt, name) or in_a_run or json_key):  # "summary: max 25 words"
        # "- Summary: one paragraph, 60 words or fewer" below a layout whose first part is "<summary paragraph>"
        return _bare_slot_line(prompt, name)
    return "" if lowered.startswith("optional") else name


#: A layout's part given by its bold title, then what it holds: "**Contact us** – one sentence using ...", "*Resolved
#: this shift* - one line" (Slack's bold).
_BOLD_PART: Final = re.compile(r"\*\*?([^*\s][^*\n]{1,59}?):?\*\*?:?\s*[-–—:]?\s*(?=\S)")
#: A ban on naming what things cost: "never quote a price", "do not include pricing", "no fees".
_PRICE_BAN: Final = re.compile(
    r"\b(?:never|don't|do not|must not|mustn't|should not|no|without)\s+"
    # not a ban on working figures out: "do not compute indirect costs yourself", "don't round the fees"
    r"(?:(?!(?:compute|calculate|recalculate|estimate|re-estimate|round|convert|change|alter|adjust|reduce|increase"
    r"|inflate|cut|split|sum|total)\b)[\w-]+\s+){0,3}?(?:prices?|pricing|costs?|fees?|amounts?|invoice\s+totals?|"
    r"deductibles?)\b(?!\s+(?:of|for)\b)"
)
#: A ban on percentages: "Do not mention ... deductibles or percentages", "no percentages".
_PERCENT_BAN: Final = re.compile(
    r"\b(?:never|don't|do not|must not|mustn't|should not|no|without)\s+(?:(?!(?:compute|calculate|round|convert|change"
    r"|alter|adjust)\b)[\w-]+,?\s+){0,8}?(?:percentages?|percents?|per\s?cent)\b(?!\s+(?:of|for)\b)"
)


#: A part of the response named just before a bracket that holds a size: "a short headline (max 10 words)".
_PART_BEFORE_BRACKET: Final = re.compile(
    r"\b(" + "|".join(sorted(map(re.escape, _PARTS - _WHOLE_RESPONSE), key=len, reverse=True)) + r")\s*\([^()]*$"
)
#: A size written as an adjective of a part the sentence adds to the response: "and a one-sentence opener", "start
#: with a single-sentence hook".
_SIZED_PART: Final = re.compile(
    r"\b(?:and|then|with|plus|followed by|start with|begin with|open with|end with|finish with|close with)\s+an?\s+"
    r"(?:[\w-]+\s+)?[\w-]+-(?:sentence|line)\s+(?P<noun>[a-z]+)"
)
#: A size of what one item of a layout says: "One sentence giving the number of objections", "Give one sentence on
#: why the pairing works", "Sum up the preparation in one short sentence".
_SIZE_OF_WHAT: Final = re.compile(
    r"\s+(?:on|about|giving|explaining|describing|saying|stating|naming|summari[sz]ing|why|that|to\s+\w+|with)\b"
)
#: Verbs whose "in one sentence" sizes the whole response: "Answer in one sentence", "Reply in at most 3 sentences".
_WHOLE_VERBS: Final = re.compile(
    r"^(?:answer|reply|respond|write(?:\s+(?:it|this|them|your\s+\w+))?|keep\s+it|do\s+it)\b"
)


def _counts_one_part(lowered: str, match: re.Match[str], prompt: str, text: str, unit: str) -> bool:
    """Whether a count sizes one part the sentence adds, not the whole response: a sentence that adds a part
    sized by an adjective ("and a one-sentence opener", "Start with a single-sentence hook (max 30 words)"); or,
    for sentences and lines in an item of a list that lays the response out, what one sentence says ("- Give one
    sentence on why the pairing works") or a part put "in one sentence" ("- Sum up the preparation in one short
    sentence"). "Answer in one sentence" and "- Reply in at most 3 sentences" size the response."""
    adjective = _SIZED_PART.search(lowered)
    if adjective is not None and adjective.group("noun") not in _WHOLE_RESPONSE and match.end() > adjective.start():
        return True  # the part's own size and what follows it, not "a one-paragraph reply" before it
    if re.search(
        r"\b(?:start|begin|open|end|finish|close|conclude)s?\s+with\s+(?:exactly\s+|only\s+)?(?:these|those|the\s+following)\s+$",
        lowered[: match.start()],
    ):
        return True  # "finish with these two lines:": the ending's lines, listed below
    if re.search(r"\bfirst,?\s+(?:in\s+)?$", lowered[: match.start()]):
        return True  # "Answer the question first, in one or two sentences": the opening's size
    if re.search(
        r"\b(?:a|an|one)\s+(?:final|last|closing|first|opening|extra|further|separate)\s+(?:bullet|item|line|note)\b"
        r"[^.;:]{0,40}$",
        lowered[: match.start()],
    ):
        return True  # "- A final bullet saying, in one sentence, that nothing else was found": that bullet's size
    bracketed = "(" in lowered[: match.start()] and re.fullmatch(r"\s*\)\W*", lowered[match.end() :])
    if bracketed and _lines_before_item(prompt, text) is not None:
        return True  # "2. The exact error line from the log, in backticks (one line).": that item's size
    put_in = re.search(r"(?:^|[,;:]\s*)([a-z][\w' -]{2,80}?)\s+in\s+$", lowered[: match.start()])
    of_a_part = put_in is not None and not _WHOLE_VERBS.match(put_in.group(1).strip())
    if of_a_part and re.match(r"[^.;]*?,?\s+(?:and\s+)?then\b", lowered[match.end() :]):
        return True  # "Tell me the root cause in one sentence ..., then tell me what to do next": the cause's
    if unit not in ("sentences", "lines") or _lines_before_item(prompt, text) is None:
        return False
    if _SIZE_OF_WHAT.match(lowered, match.end()):
        return True
    return of_a_part


#: A limit the sentence names by an input's words rather than by its placeholder: "Stay within the word limit" of
#: "Word limit: {word_limit}", "never exceed the character limit".
_INPUT_LIMIT: Final = re.compile(
    r"\b(?:(?:stay|keep(?:\s+it)?|be|remain)\s+(?:within|under|below|inside)|(?:do\s+not|don't|never|must\s+not)\s+"
    r"(?:exceed|go\s+over|go\s+beyond|break))\s+(?:the|your|its|our)\s+(?P<limit>(?P<unit>[a-z]+)\s+(?:limit|maximum|max|cap))\b"
)


def _input_limits(lowered: str, vocabulary: _Vocabulary) -> Iterator[_Draft]:
    """A count at most an input's value, where the sentence names the input as a limit of a unit ("the word limit"
    of {word_limit}): the bound is read per example, as a placeholder's is."""
    for found in _INPUT_LIMIT.finditer(lowered):
        field = vocabulary.input_named(found.group("limit"))
        unit = _UNITS.get(found.group("unit"))
        if field is not None and unit is not None:
            yield _count_draft(unit, None, "{" + field + "}", None, None)


def _counts(text: str, vocabulary: _Vocabulary, prompt: str = "") -> Iterator[_Draft]:
    lowered = text.lower()
    spans: list[tuple[int, int]] = []

    def fresh(match: re.Match[str]) -> bool:
        if any(start <= match.start() < end for start, end in spans):
            return False
        spans.append(match.span())
        return True

    if _FORM_LINE.match(text):
        return  # "1. [ID] Name (Institution) - one-line reason": an item of a form to fill, sized within it
    yield from _input_limits(lowered, vocabulary)
    numbered_line = _NUMBERED_LINE.match(lowered) or _reported_step(lowered, prompt)
    if numbered_line is None and (
        re.match(r"(?:after|below|under|following|before|above)\s+the\b", lowered)
        or re.match(rf"{_POSITION_LABEL.pattern}\s*:", lowered)
    ):
        return  # "After the table, write one sentence ...", "Before the list, write one line", "Step 1: ...": a part's
    # "Line 3: One sentence explaining the cause": that line's size
    scope = _numbered_part(numbered_line) if numbered_line else _part_spoken_of(lowered, prompt)
    # "Write: 1. A headline of no more than 8 words. 2. A blank line. 3. A description of 60 to 90 words": the line
    # of the response each part is
    laid_out = None if numbered_line else _layout_line(text, prompt)
    scope = laid_out or scope
    # "Under ## When to Call Us, list at least three warning signs as bullet points": that section's
    leading_section = _LEADING_SECTION.match(lowered)
    if numbered_line is None and leading_section and _has_section(prompt, leading_section.group(1).strip()):
        scope = leading_section.group(1).strip()
    # "<1-2 sentences on why the move was a problem>" under "What happened:": the size of the part it fills
    slot = re.fullmatch(r"\s*<[^<>\n]+>\s*", text) is not None
    slot_of = _slot_label(text, prompt) if slot else None
    if slot and slot_of is None:
        return  # a slot whose part has no name: no section to count in, and not the whole response
    scope = slot_of or scope
    bold_part = _BOLD_PART.match(text)  # "**Why we are recalling this product** – 2 sentences maximum."
    scope = bold_part.group(1).strip().lower() if bold_part else scope
    layout = None if numbered_line or slot_of or bold_part else _layout_label(text, prompt)
    if layout == "":
        return  # "2. Optional subheadline: one plain sentence, or skip it": a part the response may leave out
    scope = layout or scope  # "Why: 1-2 plain sentences." among the answer's "URGENCY: ..." and "Next step: ..."
    # the part is named: never the whole response
    fixed = (
        numbered_line is not None
        or laid_out is not None
        or slot_of is not None
        or bold_part is not None
        or layout is not None
        or (leading_section is not None and scope == leading_section.group(1).strip())
    )
    each = re.match(r"^(?:(?:for|in)\s+)?(?:each|every)\s+(?:single\s+)?[\"“']?([a-z]+(?: point)?)\b", lowered)
    bare_plural = re.match(  # "Sentences must be under 20 words", "Titles must not exceed 60 characters": each one
        r"^([a-z]+s)\s+(?:should|must|shall|need to|have to|can't|cannot|shouldn't|mustn't|may not)\b", lowered
    )
    each = each or (bare_plural if bare_plural and _part(bare_plural.group(1)) else None)
    # "One bullet per user-visible change, max 25 words": the size of each bullet
    one_per = re.match(r"^(?:one|a single)\s+([a-z]+(?: point)?)\s+(?:per|for each|for every)\b", lowered)
    leading_per = _part(each.group(1)) if each else _part(one_per.group(1)) if one_per else None
    # "Each clue must be 12 words or fewer" where the response is a JSON list of objects with the key clue
    key_of_each = (
        _json_key_named(prompt, each.group(1))
        if each and leading_per is None and not each.group(0).startswith(("for", "in"))
        else None
    )
    if key_of_each is not None and each is not None:
        scope, fixed, leading_per = key_of_each, True, (each.group(1), "items")
    elif (
        each
        and leading_per is None
        and (each.group(0).startswith(("for", "in")) or each.group(1) not in _WHOLE_RESPONSE)
    ):
        return  # "For each issue, explain the fix in one or two sentences", "Each cell is one sentence": per thing
    elif leading_per is not None:  # "Each tweet must stay under 40 words": per tweet, not a "tweet" section
        scope = None
    if _TWENTY_FOUR_HOUR.search(lowered) and "am/pm" not in lowered:  # "never am/pm" is read as a ban below
        yield _count_draft("am_pm_times", None, 0, None, None)
    if (  # "Never quote a price, even if the caller asks", "No price, discount or value-for-money language"
        _PRICE_BAN.search(lowered)
        and not library.SOURCED_CUE.search(text)  # "don't invent prices": none the source lacks, not none at all
        and not re.search(r"(?<!even )\b(?:if|unless|when|whenever|except|only)\b", lowered)
    ):
        yield _count_draft("prices", None, 0, None, None)
    if _PERCENT_BAN.search(lowered) and not re.search(
        r"(?<!even )\b(?:if|unless|when|whenever|except|only)\b", lowered
    ):
        yield _count_draft("percentages", None, 0, None, None)
    if _THIRD_PERSON.search(lowered):  # "Write it in the third person": the narrator never says I or we
        yield _count_draft("first_person", None, 0, None, None)
    if _NO_CONTRACTIONS.search(lowered) and not _conditional_at(text, 0):  # "Do not use contractions"
        yield _count_draft("contractions", None, 0, None, None)
    those = _BAN_ON_THOSE.search(lowered)
    if those is not None and not _conditional_at(text, those.start()):
        for unit in dict.fromkeys(
            _UNITS[k] for k in re.findall(rf"\b(?:full\s+)?({_STRUCTURAL})\b", lowered[: those.start()])
        ):
            if unit in _BANNED_KINDS_UNITS:
                yield _count_draft(unit, None, 0, None, None)
    kinds = _BANNED_KINDS.search(lowered)
    if kinds is not None and _negation(text[: kinds.start()]) is not None:
        # "Never copy sample values that could identify a person (emails, names, phone numbers, ...)": the kinds of
        # it a count can find
        for unit in dict.fromkeys(_UNITS[word] for word in _KIND_WORD.findall(kinds.group(1))):
            yield _count_draft(unit, None, 0, None, None)
    # "No clinical advice, ... doses or diagnoses", or the same after a colon: "Never copy personal data into the
    # reason: no names, phone numbers or email addresses"
    after_colon = re.search(r":\s+(?=no\s)", lowered)
    listed_ban = _LISTED_BAN.match(lowered) or (
        _LISTED_BAN.match(lowered[after_colon.end() :]) if after_colon else None
    )
    if listed_ban is not None and not _conditional_at(text, 0):
        # "No clinical advice, painkiller doses or diagnoses in any field": the kinds of the list a count finds
        for item in re.split(r",\s*(?:or\s+|and\s+|nor\s+)?|\s+or\s+|\s+and\s+|\s+nor\s+", listed_ban.group(1)):
            kind_named = re.search(rf"\b({_STRUCTURAL})\s*$", item.strip())
            if kind_named is not None and _UNITS[kind_named.group(1)] in _BANNED_KINDS_UNITS:
                yield _count_draft(_UNITS[kind_named.group(1)], None, 0, None, None)
    for kind, pattern in _count_patterns(vocabulary.number):
        for match in pattern.finditer(lowered):
            if not fresh(match):
                continue
            groups = match.groups()
            counted = lowered[match.end(len(groups) - 1) : match.end()].strip()  # "key points", "short tips"
            if kind == "unit_first":
                kind, groups, counted = "at_most", groups[::-1], groups[0]
            if kind == "listed":
                kind, counted = "exact", groups[-1]
            unit = _UNITS.get(groups[-1], "list_items")
            if unit == "words" and re.match(r"\s*(?:-\s*)?for(?:\s*-\s*|\s+)word\b", lowered[match.end() :]):
                continue  # "2 or 3 quotes copied word for word": how they are copied, not a count of words
            if unit == "headings" and (_plain_heading_lines_after(prompt, text) or _slashed_titles(text)):
                continue  # "these four sections, each heading on its own line:" over plain lines: those, by name
            if unit == "list_items" and re.match(r"numbered\b", counted):
                unit = "numbered_items"  # "at most 3 numbered steps": a numbered list's, never steps in prose
            if re.search(r"\bor\s+(?:the\s+|a\s+)?(?:single\s+)?$", lowered[: match.start()]):
                continue  # "a short list of bullets, or the single word None": one of two forms, not a size
            if _THEN_ANOTHER_PART.match(lowered, match.end()):
                continue  # "at most 3 sentences of dialogue, then one line of action": one part of a sequence
            if _NUMBER_LABEL.search(lowered[: match.start()]):
                continue  # "hint 1 points to the area": a numbered thing's name, and "points" a verb
            if _conditional_at(lowered, match.start()):
                continue  # "Order bullets ... If you find nothing, write "None" instead of bullets": only then
            if re.match(r"\s+(?:from|out\s+of)\s+(?:the|your|their|its|this|that|each)\b", lowered[match.end() :]):
                continue  # "One sentence from the statement of the director must be quoted": one picked from a source
            uncounted = _UNCOUNTED.match(lowered, match.end())
            body_only = uncounted is not None and _OUTSIDE_THE_BODY.match(lowered, uncounted.end()) is not None
            if uncounted and not (body_only and (scope is None or scope in BODY_NAMES)) and key_of_each is None:
                continue  # "no more than two sentences, not counting the citation": a count of something unsaid
            clause = _CLAUSE_BREAK.split(lowered[: match.start()])[-1]  # the words before the count, in its clause
            sized = re.search(
                r"\b(?:the|each|every|its|their)\s+([a-z]+)\s+(?:is|are|being|should be|must be)\s+$", clause
            )
            if sized and sized.group(1) not in _WHOLE_RESPONSE and scope is None and leading_per is None:
                continue  # "where the rationale is a single sentence": the size of a part, not of the response
            if re.search(
                r"\b(?:part|word|piece|portion|bit|string)s?\s+(?:of\s+\w+\s+)?(?:that|which)\s+(?:is|are)\s+$", clause
            ):
                continue  # "any part of it that is 4 or more letters long": what the count picks out, not a size
            part_named = re.search(
                r"[\"“'`]([^\"”'`]{1,30})[\"”'`]\s+(?:to\s+be|is|are|should\s+be|must\s+be|will\s+be|has|have)\b",
                lowered[: match.start()],
            )
            if part_named and scope is None and leading_per is None and not _has_section(prompt, part_named.group(1)):
                continue  # 'I want "Strengths" to be one sentence': a column's or a field's size, not the response's
            under = _UNDER_A_SECTION.match(lowered, match.end())  # "no more than three bullet points under Highlights"
            under_section = under.group(1).strip() if under and _has_section(prompt, under.group(1).strip()) else None
            if under_section is None and re.match(
                r"\s+(?:directly\s+|right\s+|just\s+)?(?:under|below|beneath|above|after)\s+the\b",
                lowered[match.end() :],
            ):
                continue  # "one line directly under the table": a part placed somewhere, not the response's lines
            if vocabulary.bound(groups[0]) == 0 and counted != groups[-1]:
                continue  # "no hype words", "no filler sentences": a kind of word to leave out, not none at all
            if _AT_AN_EDGE.search(clause):
                continue  # "finish with two review questions": what the end holds, not what the whole response does
            if numbered_line is None and re.search(
                r"\b(?:then|followed by|after (?:that|it))\s+(?:(?:exactly|only)\s+)?$", lowered[: match.start()]
            ):
                continue  # "first line is the title, then one paragraph": a part of a sequence, not the whole (a
                # numbered line's sequence is that line: 'Line 2: "Reason: " followed by one sentence')
            if kind == "none" and _SIZE_AFTER.match(lowered, match.end()):
                continue  # "no bullet longer than 12 words": the size of each bullet (read below), not none at all
            if kind == "none" and re.match(r"\s+(?:like|such as|of the kind|saying)\b", lowered[match.end() :]):
                continue  # "no sentence like Here is the comment": that kind of sentence, not none at all
            if kind == "none" and re.match(
                r"\s+(?:[a-z]+\s+){0,2}(?:except|other than|apart from|besides|outside|save)\b", lowered[match.end() :]
            ):
                continue  # "no hashtags other than in the greeting": some are allowed, only where the rest says
            if kind == "none" and unit in ("words", "sentences", "characters", "paragraphs", "lines"):
                continue  # "no words in all caps other than STOP": a kind of word; a response is never wordless
            if unit == "list_items" and (kind == "none" or (kind == "exact" and vocabulary.bound(groups[0]) == 0)):
                continue  # "ask no questions", "give no examples": content to leave out, not a list to leave out
            if unit == "list_items" and _MENTIONED.search(clause):
                continue  # "highlight at least three features": in prose as well as in a list
            if unit in ("sentences", "paragraphs", "lines") and re.match(
                r"\s+of\s+(?:apology|apologies|thanks|gratitude|praise|small\s+talk|chit-?chat|filler|marketing|"
                r"sales\s+talk|empathy|sympathy|reassurance|pleasantries|humou?r|jokes?|commentary|context)\b",
                lowered[match.end() :],
            ):
                continue  # "No more than one sentence of apology": the sentences of one kind, not the response's
                # (but "one or two sentences of explanation" sizes that part)
            if (
                unit == "list_items"
                and not _has_section(prompt, counted)
                and (
                    re.match(rf"\s+and\s+(?:{vocabulary.number})\s+[a-z]", lowered[match.end() :])
                    or re.search(rf"\b(?:{vocabulary.number})\s+[a-z]+\s+and\s+$", lowered[: match.start()])
                )
            ):
                continue  # "List exactly 3 pros and 3 cons": two lists, or one of six, not three items (but "10
                # headlines and 4 descriptions" over a Headlines section counts there)
            low: int | str | None
            high: int | str | None
            no_part_over: tuple[str, str] | None = None
            # a ban is itself the refusal: "emojis are banned, and links are not permitted" refuses both
            disallowed = kind != "none" and _DISALLOWED_AFTER.match(lowered[match.end() :]) is not None
            if disallowed and kind not in ("above", "below"):
                continue  # "one sentence in italics is NOT allowed": that form refused, no count asked for
            if kind == "none":
                low, high = None, 0
            elif kind == "range":
                low, high = vocabulary.bound(groups[0]), vocabulary.bound(groups[1])
                if low is None or high is None:
                    continue
                before = lowered[: match.start()]
                if re.search(rf"\b(?:{_AT_LEAST})\s*$", before):  # "at least 3-5 key points": 3 or more
                    high = None
                elif re.search(
                    r"\b(?:no more than|not more than|at most|up to|(?:a )?max(?:imum)?(?: of)?)\s*$", before
                ):
                    low = None  # "up to 3-5 tips": 5 or fewer; but "keep it to 80-120 words" is the range
            else:
                value = vocabulary.bound(groups[0])
                if value is None:
                    continue
                negated = _NEGATED_COMPARISON.search(lowered[: match.start()]) is not None
                no_part = _NO_PART.search(lowered[: match.start()]) if kind == "above" else None
                # "with no sentence longer than 15 words": every sentence 15 words or fewer
                no_part_over = _part(no_part.group(1)) if no_part is not None else None
                negated = negated or no_part_over is not None
                if kind == "above" and match.group(0).startswith(("past", "beyond")) and not negated:
                    continue  # "in the past 3 days" is no bound; "do not go past 3 bullets" is one
                if kind in ("above", "below") and (disallowed or negated):
                    # "don't use more than two hashtags", "more than two hashtags is not allowed"
                    kind = "at_most" if kind == "above" else "at_least"
                if kind == "hyphenated":  # a length in words or characters is a size, not a tally
                    if _sizes_a_part(lowered[: match.start()], lowered[match.end() :]):
                        continue
                    kind = "about" if _UNITS[groups[-1]] in ("words", "characters") else "exact"
                if kind == "about":  # "about 200 words": within a quarter either way
                    if not isinstance(value, int):
                        continue  # "about {n} words" is no exact count, and its margin is no bound of the input
                    low = round(value * (1 - _APPROXIMATE))
                    high = max(round(value * (1 + _APPROXIMATE)), value + 1)
                    hard = _HARD_LIMIT_AFTER.match(lowered, match.end())
                    if hard is not None and int(hard.group(1)) > value:
                        high = int(hard.group(1))  # "roughly 150 words; never go over 200": the limit it states
                elif kind == "below":
                    low, high = None, value - 1 if isinstance(value, int) else value
                elif kind == "above":
                    low, high = value + 1 if isinstance(value, int) else value, None
                elif kind == "at_most":
                    low, high = None, value
                elif kind == "at_least":
                    low, high = value, None
                else:
                    if value == 0:
                        low, high = None, 0
                    else:
                        low, high = value, value
            if laid_out is not None and unit == "lines":
                continue  # "3. One line beginning ...": that line is one line by its place in the layout
            relative = re.match(r"\s*(?:per|for each|for every)\s+([a-z]+)", lowered[match.end() :])
            if relative and _part(relative.group(1)) is None:
                continue  # "one bullet per change": a count relative to the input's changes, not of the response
            per = (  # "..., each under 15 words"; "limit each paragraph to 3 sentences"
                no_part_over
                or _per(lowered[match.end() :])
                or _limited_parts(lowered[match.start() : match.end()], unit)
                or _each_before(lowered[: match.start()])
                or _each_before(lowered[: match.start(1)])
                or _each_after(lowered[: match.start()], lowered[match.end() :])
                or leading_per
                or _each_opens(re.split(r"(?<=[.!?])\s+", lowered[: match.start()])[-1])
                or (("item", "items") if _EACH_OF_A_LIST.search(lowered[: match.start()]) else None)
                # "max 3, one line each": the size of each item, not of the whole
                or (("item", "items") if re.match(r"\s+each\b(?!\s+[a-z])", lowered[match.end() :]) else None)
            )
            if per is None and scope is None and not fixed and _counts_one_part(lowered, match, prompt, text, unit):
                continue  # "and a one-sentence opener", "- Give one sentence on why the pairing works": that part's
            if per is not None and per[1] == "items" and unit in ("list_items", "bullets", "numbered_items"):
                continue  # "four options per question": items inside items, which the parts of a list cannot tell
            if unit in ("list_items", "bullets", "numbered_items") and _CHOICES.search(text):
                continue  # "Multiple choice: 4 options A-D": each question's options, not the quiz's items
            elsewhere = re.search(r"\b(?:each|every)\s+(?:single\s+)?([a-z]+)\b", clause + match.group(0))
            if (
                elsewhere
                and per is None
                and scope is None
                and elsewhere.group(1) not in _WHOLE_RESPONSE
                and _part(elsewhere.group(1)) is None
            ):
                continue  # "keep each cell to one sentence": the size of each of a kind of part this cannot split
            keyed = re.search(r"[\"“'`]([a-z][\w-]{0,30})[\"”'`]\s*\([^()]*$", lowered[: match.start()])
            # "Title at most 40 characters, body at most 150" after a JSON template with those keys: each key's own
            key_clause = re.fullmatch(r"\s*(?:the\s+)?[\"“'`]?([a-z][\w-]{0,30})[\"”'`]?\s*:?\s*", clause)
            if keyed is None and key_clause is not None and key_clause.group(1) in _template_keys(prompt):
                keyed = key_clause
            # "a short headline (max 10 words)": the size in brackets after a part is that part's
            parted = _PART_BEFORE_BRACKET.search(lowered[: match.start()])
            where = next((name for name in (counted, groups[-1]) if name and _has_section(prompt, name)), None)
            scopes: list[str | None]
            if key_of_each is not None:  # "Each clue ..." of a JSON list of objects: that key's, object by object
                scopes = [key_of_each]
            elif body_only:  # "The body is 80 to 150 words (not counting the subject line)": the response's body
                scopes = ["body"]
            elif under_section is not None:
                scopes = [under_section]
            elif keyed is not None:  # 'keys "score" (integer 1-5) and "justification" (2-3 sentences)': that key's
                scopes = [keyed.group(1)]
            elif parted is not None and scope is None:
                scopes = [parted.group(1)]
            elif scope is not None and _SIZED_ITEM.match(lowered):  # "- summary (2-3 sentences)": that part's
                scopes = [None if _is_the_output(prompt, scope) else scope]
            elif where is not None:  # "3-5 key points" and a "Key Points:" section: count in that section
                scopes = [where]
            elif scope is None or (
                # "Write the summary in exactly this structure:" over a "Summary" heading and the line below it, "One
                # or two sentences ...": that heading's part, though the whole is called a summary too
                _is_the_output(prompt, scope) and not (layout and _bare_title_line(prompt, scope))
            ):  # "Write a product title. The title must ..."
                scopes = [None]
            elif (section := _section_named(prompt, scope)) is not None:  # "The meta title ..." and "Title: <...>"
                scopes = [section]
            elif scope in _PARTS or fixed:  # "The title should be at most 10 words", "Line 3: ..."
                scopes = [scope]
            else:  # "The summary should be ...": the section, or the response when it is the summary
                scopes = [None, scope]
            for bounds in _readings(low, high, lowered[match.start() : match.end()]):
                for place in scopes:
                    yield _count_draft(unit, *bounds, place, per)
            rest = lowered[match.end() :]
            while kind == "none" and (more := _MORE_BANNED.match(rest)):  # "no hashtags or emojis": each unit
                yield _count_draft(_UNITS[more.group(1)], None, 0, None, None)
                rest = rest[more.end() :]


#: Kinds of thing a count finds that a ban on "those" named before it refuses (not layout: "bullets ... never use
#: them" is read where the layout is).
_BANNED_KINDS_UNITS: Final = frozenset({"phone_numbers", "emails", "card_numbers", "commit_hashes", "doses"})
#: Examples in brackets of what a ban covers, among them kinds a count finds: "(emails, names, phone numbers)".
_KIND_WORD: Final = re.compile(r"\b(phone numbers|telephone numbers|email addresses|e-mail addresses|emails)\b")
#: A ban that opens its sentence with a list of kinds: "No clinical advice, painkiller doses or diagnoses in any
#: field", "Never include card numbers, passwords or email addresses".
_LISTED_BAN: Final = re.compile(
    r"^(?:[-*•]\s+)?(?:no|never\s+(?:include|give|mention|add|write|share|put)|(?:do\s+not|don't)\s+(?:include|give|"
    r"mention|add|write|share|put))\s+(?:any\s+)?([^.;:!?()]+)"
)
_BANNED_KINDS: Final = re.compile(r"\(([^()]*\b(?:phone numbers|telephone numbers|email addresses|emails)\b[^()]*)\)")
#: The options of a multiple-choice question: "4 options A-D", "options labelled A to D", "multiple choice".
_CHOICES: Final = re.compile(r"\bmultiple[- ]choice\b|\boptions?\b[^.\n]{0,20}\b[A-E]\s*(?:-|–|to)\s*[B-H]\b", re.I)
#: A line of an output form, opening with a slot to fill: "1. [ID] Name (Institution) - one-line reason".
_FORM_LINE: Final = re.compile(r"^\s*(?:(?:\d+[.)]|[-*•])\s+)?\[[A-Za-z][^\]\n]*\]\s+[A-Z(\[<]")
#: A refusal after a count in its clause: "more than two hashtags is not allowed", "one sentence in italics is NOT
#: allowed", "fewer than 3 bullets isn't acceptable".
_DISALLOWED_AFTER: Final = re.compile(
    r"[^.;:!?]{0,40}?\b(?:(?:is|are)\s+(?:not|never)|isn't|aren't)\s+(?:allowed|permitted|acceptable|ok|okay)\b"
)
#: A hard limit stated after an approximate count, its unit left out: "about 150 words, never more than 200".
_HARD_LIMIT_AFTER: Final = re.compile(
    r"[^.;:!?\n]{0,20}?[,;(-]?\s*(?:but\s+|and\s+)?(?:(?:never|not|don't|do not|must not|mustn't)\s+(?:go\s+|be\s+)?"
    r"(?:over|above|past|beyond|more than|exceed(?:ing)?)|no more than|at most|max(?:imum)?(?: of)?|up to"
    r"|(?:hard |absolute )?(?:limit|cap)(?: of| is)?)\s+(\d+)\b(?!\s*(?:%|[a-z]))"
)
#: "No sentence [should be] longer than" before a count: a bound on each part of that kind, not on the response.
_NO_PART: Final = re.compile(
    r"\bno\s+(?:single\s+)?([a-z]+(?: point)?)\s+(?:(?:should|must|may|can|will|shall)\s+(?:be\s+|run\s+|go\s+)?|"
    r"is\s+|goes\s+|runs\s+)?$"
)
#: A size after a part a ban names: "no bullet longer than 12 words", "no line over 80 characters".
_SIZE_AFTER: Final = re.compile(
    r"\s+(?:(?:should|must|may|can|will|shall)\s+(?:be\s+|run\s+|go\s+)?|is\s+|goes\s+|runs\s+)?"
    r"(?:(?:longer|more|shorter|fewer|less|wider)\s+than|over|above|exceed(?:s|ing)?|beyond|past)\s+(?:\d|[a-z]+\s+(?:words|"
    r"characters|sentences|lines|syllables))"
)
#: A negation just before "more than N" or "fewer than N", which turns it into "at most N" or "at least N".
_NEGATED_COMPARISON: Final = re.compile(
    r"\b(?:don't|do not|never|must not|mustn't|should not|shouldn't|cannot|can't|not|avoid)\s+(?:[\w']+\s+){0,3}$"
)
#: A unit listed after a banned one: "do not use any hashtags[, emojis] or links", "no bold/headers".
_MORE_BANNED: Final = re.compile(
    rf"(?:\s*,\s*(?:or\s+|and\s+|nor\s+)?|\s+or\s+|\s+and\s+|\s+nor\s+|\s*/\s*)(?:any\s+|an?\s+)?"
    rf"({_STRUCTURAL}|{_ONE_OF_A_KIND})\b"
)
#: Quantities that are approximate in everyday speech: "a couple of sentences" is often three, "a dozen" fifteen.
_LOOSE: Final = {"a couple of": 3, "a dozen": 15}


def _readings(
    low: int | str | None, high: int | str | None, phrase: str
) -> list[tuple[int | str | None, int | str | None]]:
    """The bounds a count can be read with: as written, then, for a range, each of its sides alone (a response
    that is too short and one that is too long break different halves of the rule), and a loose upper bound for
    an approximate quantity ("a couple of sentences": at most two, or at most three). Selection keeps the ones
    the labelled examples support; the pre-check holds back those that fail good ones."""
    readings: list[tuple[int | str | None, int | str | None]] = [(low, high)]
    if low is not None and high is not None and low != high:
        readings += [(low, None), (None, high)]
    loose = next((bound for words, bound in _LOOSE.items() if words in phrase), None)
    if loose is not None and isinstance(high, int) and loose > high and (low is None or low != high):
        readings.append((low, loose))
    return readings


def _part(word: str) -> tuple[str, str] | None:
    """The word and the kind of part (:data:`PART_KINDS`) a "per"/"each" names: a response holds one title or
    headline, but "each headline" says it holds several, each an item (or a line of its own)."""
    if word in PART_KINDS:
        return word, PART_KINDS[word]
    return (word, "items") if word in _PARTS or word.removesuffix("s") in _PARTS else None


def _per(after: str) -> tuple[str, str] | None:
    """``per tweet``, ``for each point``, ``in every paragraph`` right after a count: the word and the kind of
    part it counts in (:data:`PART_KINDS`)."""
    match = re.match(
        r"\s*(?:per|for each|in each|each|for every|in every|every|a|an)\s+(?:single\s+)?([a-z]+(?: point)?)\b",
        after,
    )
    return _part(match.group(1)) if match else None


#: A count of what the response starts or ends with ("finish with two review questions").
_AT_AN_EDGE: Final = re.compile(rf"\b(?:{_OPENING}|{_CLOSING}|wrap up)s?\s+(?:\w+\s+){{0,2}}?with\s+$")
#: What a count leaves out, right after it: the parts counted are not ones a check can tell apart.
_UNCOUNTED: Final = re.compile(
    r"\s*[,(]?\s*(?:not counting|without counting|excluding|except(?: for)?|apart from|besides|not including)\b"
)
#: "Each one" of a list the clause before describes: '"strengths": a list of 2 or 3 strings; each one under 12
#: words' counts per item.
_EACH_OF_A_LIST: Final = re.compile(
    r"\b(?:list|array)\s+of\b[^.]{0,60}?[,;:]\s*(?:and\s+)?each(?:\s+one|\s+of\s+them)?\s+(?:is\s+|must\s+be\s+"
    r"|should\s+be\s+)?(?:\w+\s+)?$"
)
#: A section a count is made under: "under Highlights", "in the ## Notices section", 'under "Next steps"'.
_SECTION_NAMED: Final = (
    r"(?:under|in|within)\s+(?:the\s+)?[\"“'`]?#*\s*([a-z][\w &'/-]{1,40}?)[\"”'`]?(?:\s+(?:section|heading|part))?"
)
_UNDER_A_SECTION: Final = re.compile(rf"\s+{_SECTION_NAMED}\s*(?:[.,;:)]|$)")
#: A section a sentence opens by naming: "Under ## When to Call Us, ...", "In the Summary section, ...".
_LEADING_SECTION: Final = re.compile(rf"^(?:[-*•]\s+)?{_SECTION_NAMED}\s*,")
#: What a count may leave out and still be the body's: "(not counting the subject line)", "excluding the greeting".
_OUTSIDE_THE_BODY: Final = re.compile(
    r"\s+(?:the\s+|any\s+|a\s+|your\s+)?(?:subject(?:\s+line)?|title|headline|heading|greeting|salutation|"
    r"sign[- ]?off|signature|closing(?:\s+line)?)s?\b"
)
#: Verbs that ask for things to be said, in whatever form: what they count need not be a list's items.
_MENTIONED: Final = re.compile(
    r"\b(?:mention|highlight|include|cover|discuss|reference|cite|describe|explain|address|touch(?:es)? on|"
    r"emphasi[sz]e|showcase|incorporate|weave|use)\w*\b"
)


def _section_named(prompt: str, noun: str) -> str | None:
    """The section of the output ``noun`` names: itself, or its head noun ("the meta title" of a prompt whose
    format has a ``Title:`` line)."""
    head = noun.split()[-1]
    return next((name for name in dict.fromkeys((noun, head)) if _has_section(prompt, name)), None)


def _slot_label(slot: str, prompt: str) -> str | None:
    """The label on the line above an answer template's slot ("What happened:" above "<1-2 sentences ...>"), past
    the part's other slots ("INSTAGRAM:" over "<caption ...>" and "<final line: 3 to 5 hashtags>"), in lower case:
    the part the slot fills."""
    lines = [line.strip() for line in prompt.splitlines()]
    for i, line in enumerate(lines):
        if line == slot.strip():
            above = next(
                (earlier for earlier in reversed(lines[:i]) if earlier and not re.fullmatch(r"<[^<>]+>", earlier)), ""
            )
            label = re.fullmatch(r"(?:#+\s*|\*\*)?([A-Za-z][\w '/&-]{0,40}?)\s*:?\s*(?:\*\*)?:?", above)
            return label.group(1).strip().lower() if label else None
    return None


def _bare_title_line(prompt: str, part: str) -> bool:
    """Whether the prompt's answer layout has a line that is ``part``'s title alone ("Summary", "## Summary",
    "**Summary**") with a line of what goes under it right below."""
    title = re.compile(rf"\s*(?:#{{1,6}}\s*)?\**{re.escape(part)}\**\s*:?\s*", re.IGNORECASE)
    lines = prompt.splitlines()
    return any(title.fullmatch(line) and lines[i + 1].strip() for i, line in enumerate(lines[:-1]))


def _is_the_output(prompt: str, part: str) -> bool:
    """Whether the prompt asks for ``part`` itself ("Write a product title for ...", "Output only the title"):
    its title is then the whole response, not a section of it, unless the answer format gives it a line of its
    own among others ("Title: <title>")."""
    name = re.escape(part)
    if re.search(rf"^\s*{name}\s*:\s*[<\[{{]", prompt, re.IGNORECASE | re.MULTILINE):
        return False
    return bool(
        re.search(
            rf"\b(?:write|generate|create|give|suggest|produce|draft|compose|propose|come up with)\s+(?:me\s+)?"
            rf"(?:a|an|one|the)\s+(?:(?!(?:a|an|the)\b)[\w-]+\s+){{0,3}}?{name}\b(?!\s*(?:and|,|&|plus)\s)"
            rf"|\b(?:output|return|reply with)\s+only\s+the\s+{name}\b",
            prompt,
            re.IGNORECASE,
        )
    )


def _sizes_a_part(before: str, after: str) -> bool:
    """Whether a sized noun ("a one-line call to action", "a 3-sentence summary") is one part of the response
    rather than the response: one it ends or starts with or adds ("finish with a one-line call to action"), one
    given for each of several things ("for each problem, give ... a one-sentence explanation"), or a part by
    name ("a 10-word title")."""
    if re.search(
        r"\b(?:with|add|adds|adding|include|includes|including|append|plus|followed by)\s+(?:an?\s+|one\s+)?$", before
    ):
        return True
    if re.search(r"\b(?:each|every|per)\b", before):
        return True
    noun = re.match(r"\s*(?:[a-z\-]+\s+){0,2}?([a-z]+(?: line| to action)?)\b", after)
    return noun is not None and (noun.group(1) in _PARTS or noun.group(1) == "call to action")


def _limited_parts(phrase: str, unit: str) -> tuple[str, str] | None:
    """``keep the sentences to 20 words``, ``limit the bullets to 10 words each``: a limit set on several parts
    of a response, in another unit than theirs, holds for each of them."""
    match = re.match(r"(?:limit|keep|restrict|cap)\w*\s+(?:the\s+|your\s+)?([a-z]+s)\s+(?:to|at)\b", phrase)
    if match is None or _UNITS.get(match.group(1)) == unit:
        return None
    return _part(match.group(1))


def _each_before(before: str) -> tuple[str, str] | None:
    """``3 bullet points, each under 15 words``: the count that follows "each" is per part, the part named
    before it (:data:`PART_KINDS`)."""
    within = re.findall(r"\b(?:each|every)\s+(?:single\s+)?([a-z]+(?: point)?)\b", _CLAUSE_BREAK.split(before)[-1])
    if within and (part := _part(within[-1])):  # "Limit each paragraph to 3 sentences", "each headline"
        return part
    plural = re.search(r"\b([a-z]+s)\s+of\s+$", before)  # "Short sentences of 20 words or fewer": each sentence
    if plural is not None and plural.group(1) in PART_KINDS:
        return plural.group(1), PART_KINDS[plural.group(1)]
    if not re.search(r"\beach(?:\s+one)?(?:\s+of\s+them)?(?:\s+(?:should|must)\s+be|\s+is|\s+being)?\s*$", before):
        return None
    named = [(m.end(), word) for word in PART_KINDS for m in re.finditer(rf"\b{re.escape(word)}\b", before)]
    if not named:
        return None
    word = max(named)[1]
    return word, PART_KINDS[word]


def _each_opens(sentence: str) -> tuple[str, str] | None:
    """The part a sentence's opening "Each X" names, for a count later in that sentence of a unit that holds
    several ("1. A numbered breakdown ... Each item starts with the token, then an explanation of at most 15
    words"): per X. Only a later sentence's: the unit's own opening is read before the counts."""
    each = re.match(r"(?:each|every)\s+(?:single\s+)?([a-z]+)\b", sentence)
    return _part(each.group(1)) if each is not None else None


def _each_after(before: str, after: str) -> tuple[str, str] | None:
    """``short sentences of no more than 12 words each``: a count followed by "each" is per the part its clause
    names before it (:data:`PART_KINDS`)."""
    if not re.match(r"\s+each\b", after):
        return None
    clause = _CLAUSE_BREAK.split(before)[-1]
    named = [(m.end(), word) for word in PART_KINDS for m in re.finditer(rf"\b{re.escape(word)}\b", clause)]
    return (max(named)[1], PART_KINDS[max(named)[1]]) if named else None


def _part_spoken_of(lowered: str, prompt: str) -> str | None:
    """The part of the output a sentence sizes or describes (:func:`_scope`), or the one its label names where
    the prompt asks for such a part ("**Summary**: one or two sentences" in a prompt with a Summary section)."""
    scope = _scope(lowered)
    keyed = re.match(r"(?:[-*•]\s+)?[\"“'`]?([a-z][a-z0-9]*(?:_[a-z0-9]+)+)[\"”'`]?\s", lowered)
    if scope is None and keyed is not None and keyed.group(1) in _template_keys(prompt):
        return keyed.group(1)  # "suggested_first_reply under 320 characters": that JSON key's value
    label = re.match(r"(?:[-*•]\s+)?\**([a-z][a-z _-]{0,30}?)\**\s*:\**\s", lowered)
    if scope is None and label is not None and _has_section(prompt, label.group(1)):
        return label.group(1)
    written = re.match(  # "3. Write a title in the form ..., maximum 8 words" where the format has "Title: <title>"
        r"(?:\d+[.)]\s+|[-*•]\s+)?(?:write|give|add|create|generate|provide|produce)\s+(?:a|an|the)\s+"
        r"(?:short\s+|brief\s+|one-line\s+)?([a-z]+)\b",
        lowered,
    )
    if scope is None and written is not None and not _is_the_output(prompt, written.group(1)):
        return written.group(1) if _has_section(prompt, written.group(1)) else None
    return scope


#: A part named and sized in brackets, and nothing more: "- summary (2-3 sentences)" in a list of a response's keys.
_SIZED_ITEM: Final = re.compile(
    r"^(?:[-*•]\s+)?[\"“'`]?([a-z][a-z_\-]{0,30}(?:\s[a-z][a-z_\-]{0,20})?)[\"”'`]?\s*\([^()]*\)\W*$"
)


#: A part of the response named at a sentence's start, then its rule: "The summary should ...", "Titles must not
#: exceed 60 characters" (a part named bare), "Title max 80 characters" (a part and its bound, nothing between; not
#: an imperative's verb: "Point out at most 3 issues" counts the issues, in no "point out" section).
_PART_AND_ITS_RULE: Final = (
    re.compile(
        r"^(?:(?:the|your|each|every)\s+|[\"“'`])([a-z][a-z\- ]{1,30}?)[\"”'`]?\s+(?:section\s+)?(?:should|must|"
        r"shall|needs?|has to|can|cannot|can't|may|is|are|will|shouldn't|mustn't|won't)(?!\w)"
    ),
    re.compile(
        r"^(?!(?:you|we|i|they|it|this|that|these|those|there|everything|nothing|all|each|every|any|please)\b)"
        r"([a-z][a-z\-]{2,20}(?:\s[a-z][a-z\-]{2,20})?)\s+(?:should|must|shall|need to|needs to|has to|have to|"
        r"can't|cannot|may not|shouldn't|mustn't)(?!\w)"
    ),
    re.compile(
        r"^(?!(?:keep|stay|be|write|use|limit|make|answer|reply|respond|aim|go|cap|point|list|give|name|mention|"
        r"include|suggest|provide|offer|add|return|output|show|identify|highlight|pick|choose|select|find|cite|"
        r"raise|flag|propose|share|ask|generate|produce|create)\b)"
        r"([a-z][a-z\- ]{1,30}?)\s+(?:max(?:imum)?|min(?:imum)?|at\s+most|at\s+least|no\s+more\s+than|up\s+to)\s+\d"
    ),
)


def _scope(lowered: str) -> str | None:
    """``The summary shouldn't be longer than ...``, or an answer format's ``TITLE: <episode title, at most 8
    words>``: a count that may apply to one section only."""
    template = re.match(rf"^([a-z][a-z_\- ]{{1,30}}?)\s*:\s*(?:[<\[]|{_SCHEMA_TYPES}\b)", lowered) or re.match(
        r"^(?:[-*•]\s+)?[\"“'`]([a-z][a-z_\-]{0,30})[\"”'`]\s*:", lowered
    )
    if template:  # "TITLE: <title, at most 8 words>", a schema's "summary: string, at most 15 words" or '"notes": ...'
        return template.group(1).strip()
    item = _SIZED_ITEM.match(lowered)
    # "- summary (2-3 sentences)", a part named and sized: that part's size; not the prompt's own "FORMAT (plain
    # text, exactly these three sections)"
    if item and item.group(1) not in _PROMPT_PARTS:
        return item.group(1).strip()
    labelled = re.match(
        r"^(?:then|next|after\s+that|finally|and)\s*,?\s+[\"“'`]([a-z][\w \-]{0,30}?):?[\"”'`]", lowered
    )
    if labelled:  # "Then `Reason:` in one or two sentences": the part under that label
        return labelled.group(1).strip()
    kept = re.match(
        r"^(?:always\s+|please\s+)?keep\s+(?:the|your)\s+([a-z][a-z\- ]{1,30}?)\s+(?:\([^)]*\)\s+)?"
        r"(?:under|below|within|(?:short|brief|concise)\s+\((?:max|maximum|at\s+most|up\s+to|under|no\s+more\s+than)\b)",
        lowered,
    )
    # "keep the body (everything after the headline) under 100 words", "keep the summary under 70 words", "keep the
    # reason short (max 25 words)"
    if kept and (kept.group(1) not in _WHOLE_RESPONSE or kept.group(1) == "summary"):
        return kept.group(1)
    limited = re.match(r"^(?:limit|cap|restrict)\s+(?:the\s+)?[\"“'`]([a-z_][\w-]{0,30})[\"”'`]\s+(?:to|at)\b", lowered)
    if limited:  # 'Limit "tags" to 5 items': that key's
        return limited.group(1)
    tagged = re.search(r"\binside\s+(?:the\s+)?<([a-z_][\w-]*)>\s*</\1>", lowered)
    if tagged:  # "inside <agent_note></agent_note> tags, write a note of no more than two sentences": the tag's
        return tagged.group(1)
    opening = re.match(
        rf"^(?:{_OPENING})s?\s+with\s+(?:a|an|the)\s+(?:[\w-]+\s+)?(title|headline|subject line|heading)\b", lowered
    )
    if opening:  # "Start with a one-line title ..., at most 72 characters": the title's size
        return opening.group(1)
    match = next((found for pattern in _PART_AND_ITS_RULE if (found := pattern.match(lowered))), None)
    if not match:
        return None
    noun = match.group(1).strip()
    if (noun in _WHOLE_RESPONSE and noun != "summary") or re.match(r"(?:whole|entire|full|complete)\b", noun):
        return None  # "the whole summary must stay under 150 words": the response, not a section of it
    plural = noun.endswith("s")
    if plural and (re.sub(r"ies$", "y", noun).removesuffix("s") in _WHOLE_RESPONSE | {"reply"} or noun in PART_KINDS):
        return None  # "Replies must be under 80 words", "Sentences must stay short": the response, or each part
    return noun


#: A part of the response named just before an edge verb ("its last sentence begins with", "one sentence that
#: starts with"), or as what the response ends with ("finish with one line starting with").
_PART_BEFORE_AN_EDGE: Final = re.compile(
    r"\b(?:sentences?|lines?|paragraphs?|items?|bullets?|cells?|rows?|questions?)\s+(?:that\s+|which\s+)?"
    r"(?:must\s+|should\s+|will\s+|has\s+to\s+)?$"
)
_PART_AT_AN_EDGE: Final = re.compile(
    r"\s*(?:a|an|one|the)\s+(?:\w+\s+)?(?:sentence|line|paragraph)\s+(?:that\s+|which\s+)?(?:start|begin|open)\w*\s+with\b"
)


#: Parts whose opening is the response's own.
_FIRST_LINES: Final = ("first line", "first sentence", "opening line", "opening sentence")
#: The first line given verbatim after a colon: "The first line must be exactly this header: name,date,hours".
_FIRST_LINE: Final = re.compile(
    r"\bfirst\s+line\s+(?:(?:must|should|has\s+to|shall)\s+be|is|reads)\s+(?:exactly\s*)?(?:this|the\s+following)?\s*"
    r"(?:header(?:\s+row)?|line|text|row)?\s*:\s*(?P<text>\S[^\n]{0,80}?)\s*$",
    re.IGNORECASE,
)
#: The first line given as a quoted form with slots: 'The first line must be exactly "Score: N/10", where N is a whole
#: number'.
_FIRST_LINE_FORM: Final = re.compile(
    r"\bfirst\s+line\s+(?:(?:must|should|has\s+to|shall|will)\s+)?(?:be|is|reads?)\s+(?:exactly\s+)?"
    r"(?:(?:in\s+)?the\s+form\s+)?[\"“](?P<form>[^\"”\n]{1,80})[\"”]",
    re.IGNORECASE,
)
#: Parts asked for at the two ends: "Include a warm-up first and a cool-down last", "start with a summary first and
#: the next steps last".
_FIRST_AND_LAST: Final = re.compile(
    r"\b(?:include|start\s+with|begin\s+with|open\s+with|put|have)\s+(?:a|an|the|one)\s+(?P<first>[\w-]+(?:\s+[\w-]+)?)"
    r"\s+(?:first|at\s+the\s+(?:start|beginning|top))\s+and\s+(?:a|an|the|one)\s+(?P<last>[\w-]+(?:\s+[\w-]+)?)\s+"
    r"(?:last|at\s+the\s+(?:end|bottom))\b",
    re.IGNORECASE,
)
#: A last line of a label and a number alone: "The last line must contain only Answer: and the number".
_LAST_LINE_NUMBER: Final = re.compile(
    r"\blast\s+line\s+(?:must|should|has\s+to|will)\s+(?:contain|hold|be|have|show)\s+only\s+[\"“']?"
    r"(?P<label>[A-Z][\w ]{0,20}:)[\"”']?\s+(?:and|followed\s+by|then)\s+the\s+(?:final\s+)?"
    r"(?:number|figure|amount|value)\b",
    re.IGNORECASE,
)
#: A slot said to be a whole number: "where N is a whole number", "X is an integer".
_WHOLE_NUMBER_SLOT: Final = re.compile(r"\b(?:where\s+)?([A-Z])\s+is\s+(?:a|an)\s+(?:whole\s+number|integer)\b")
#: An ending given after a colon: "End with this exact closing line: Ride on! The Wheelwright Team", "Finish with the
#: sign-off on its own line: — Port Carrow Harbour Office", "End with exactly: Reply STOP to opt out", "The last line is
#: exactly: Clear skies, HVAS Committee".
_CLOSING_LINE: Final = re.compile(
    rf"(?:\b(?:{_CLOSING})s?\s+with\s+(?:(?:this|the\s+following|the)\s+(?:exact\s+)?(?:closing\s+|final\s+)?(?:line|"
    r"sign-off|signature|words|text|phrase|sentence)(?:\s+on\s+(?:its|a)\s+own\s+line)?|exactly|verbatim|precisely)"
    # "The last line is exactly: Clear skies, HVAS Committee", "The very last line of the guide must be: Good luck!"
    # "... including the last line, which must be exactly: Reply STOP to opt out"
    r"|\b(?:last|final|closing)\s+line(?:\s+of\s+(?:the|your)\s+[\w-]+)?(?:,?\s+which)?\s+(?:is|must\s+be|should\s+be"
    r"|has\s+to\s+be|reads)"
    r"(?:\s+(?:exactly|verbatim|precisely))?)"
    r"\s*:\s*(?P<text>\S[^\n]{0,80}?)\s*$",
    re.IGNORECASE,
)
#: A closing block given on the lines below the sentence: "End the email with this signature block, reproduced
#: exactly:", "Finish with the following footer:".
_CLOSING_BLOCK: Final = re.compile(
    rf"\b(?:{_CLOSING})\w*\s+(?:[\w-]+\s+){{0,3}}?with\s+(?:exactly\s+)?(?:this|these|the\s+following)\s+"
    r"(?:[\w-]+\s+){0,2}?(?:block|signature|sign-off|footer|lines|closing)\b[^:\n]*:\s*$",
    re.IGNORECASE,
)


#: What the last line opens with: 'on the last line in the format "Label: X"' (the label before a placeholder
#: letter or an angle-bracket slot), "on the last line write Answer: followed by the answer", "last line: 'X: '",
#: 'one final line in the form "Serve: <temperature>"'.
_LAST_LINE: Final = re.compile(
    r"\b(?:on|in)\s+the\s+(?:last|final)\s+line\b[^.\"“]{0,40}?(?:[\"“](?P<quoted>[^\"”:]{1,30}:)\s*(?:[A-Z]|<[^>]*>|\.\.\.)?[\"”]"
    r"|\bwrite\s+(?P<bare>[A-Z][\w ]{0,20}:)(?=\s))"
    # a position label: "last line: 'BLOCKERS: ' + the blockers", "Final line: Verdict: <pass or fail>"
    r"|(?:^|\n)\s*(?:the\s+)?(?:last|final)\s+line\s*(?::|is|must\s+be|should\s+be)\s*:?\s*[\"“'‘]?"
    r"(?!(?:exactly|verbatim|precisely)\s*:)(?P<label>[A-Za-z][\w ]{0,25}:)(?=[\s\"”'’]|$)"
    # 'then one final line in the form "Serve: <temperature>"'
    r"|\b(?:last|final)\s+line\s+in\s+the\s+(?:form|format)\s+(?:of\s+)?[\"“'‘`](?P<form>[A-Za-z][\w ]{0,25}:)\s*"
    r"(?:<[^>]*>|\[[^\]]*\]|\{[^}]*\}|[A-Z]\b|\.\.\.)"
    # 'finish with a final line starting "Sources:" that lists ...'
    # 'finish with the next fixture on its own line starting "Next up:"'
    r"|\b(?:(?:last|final)\s+line|(?:finish|end)\s+with\s+(?:a|one)\s+line"
    r"|(?:finish|end|close)\s+with\s+[^.\"“\n]{0,40}?\bon\s+(?:its|a|their)\s+own\s+line)"
    r"\s+(?:starting|beginning|that\s+(?:starts|begins))"
    r"\s+(?:with\s+)?[\"“'‘`]"
    r"(?P<starting>[A-Za-z][\w ]{0,25}:)\s*[\"”'’`]",
    re.IGNORECASE,
)


def _last_line_label(text: str) -> str | None:
    """What the text says the response's last line opens with (:data:`_LAST_LINE`), if it says so."""
    last = _LAST_LINE.search(text)
    if last is None:
        return None
    return (
        last.group("quoted")
        or last.group("bare")
        or last.group("label")
        or last.group("form")
        or last.group("starting")
    )


#: An edge's exact text written without quotes, after a word that frames it: "begin with the line Dear residents,".
_UNQUOTED_EDGE: Final = re.compile(
    rf"\b(?P<verb>{_OPENING}|{_CLOSING})s?\s+with\s+the\s+(?:line|words?|phrase|greeting|salutation|sign-off|signature)"
    r"(?:\s+line)?\s+(?P<text>[^\s.;:\"“'‘][^.;:\"“”]{0,60}?)(?=,\s+(?:and|then)\b|\s*[.;]|\s*$)",
    re.IGNORECASE,
)


def _shared_by_alternatives(text: str, quoted: list[str], *, end: bool) -> str:
    """The edge a sentence gives, or what its alternatives share ('End with "Verdict: APPROVE" or "Verdict: REQUEST
    CHANGES"': "Verdict:"), up to a word's end; "" when they share nothing."""
    edge = quoted[-1] if end else quoted[0]
    if len(quoted) < 2:
        return edge
    pair = (quoted[-2], quoted[-1]) if end else (quoted[0], quoted[1])
    between = text[text.find(pair[0]) + len(pair[0]) : text.rfind(pair[1])]
    if not re.fullmatch(r"[\"”'’`]?\s*,?\s*or\s*[\"“'‘`]?", between):
        return edge
    size = next((i for i, (a, b) in enumerate(zip(*pair, strict=False)) if a != b), min(map(len, pair)))
    shared = pair[0][:size]
    cut = len(shared) if shared.endswith((" ", ":")) else max(shared.rfind(" "), shared.rfind(":") + 1)
    return shared[:cut].strip()


#: An input's value said to follow a quoted opening: 'followed by exactly the value in the ID&V status field'.
_VALUE_AFTER: Final = re.compile(
    r"\s*followed\s+by\s+(?:exactly\s+)?(?:the\s+)?(?:value|contents?|text)\s+(?:in|of|from)\s+(?:the\s+)?"
    r"(?P<phrase>[^.,;\n]{1,40}?)\s+(?:field|input|line|box)\b",
    re.IGNORECASE,
)


def _slot_filled(phrase: str, vocabulary: _Vocabulary) -> str:
    """An edge written as a form with a slot ("CLOSED: <trail name>", "Total: $X"): the slot as the input it names
    ("CLOSED: {trail_name}"), or else the form's words before it ("CLOSED:"); the phrase itself when it has none
    or its brackets hold a marker, an identifier the response keeps ("[SIGNUP_LINK]")."""
    amount = re.search(r"[$£€]\s?[XN]+(?:[.,][XN]+)?\b", phrase)  # "Section total: $X", "Fee: £XX.XX"
    if amount is not None:
        return phrase[: amount.start()].strip()
    slot = re.search(r"<([^<>]{1,40})>|\[([^\[\]]{1,40})\]", phrase)
    if slot is None or re.fullmatch(r"[A-Z0-9_]+", slot.group(1) or slot.group(2)):
        return phrase  # no slot, or a marker kept as written ("Book your spot: [SIGNUP_LINK]")
    field = vocabulary.input_named(slot.group(1) or slot.group(2))
    if field is not None:
        return phrase[: slot.start()] + "{" + field + "}" + phrase[slot.end() :]
    return phrase[: slot.start()].strip()


#: A numbered line of a layout the prompt fixes: "Line 1: the verdict, exactly one of APPROVE, REVIEW, REMOVE".
_NUMBERED_LINE: Final = re.compile(r"(?P<kind>line|row)\s+(?P<n>\d{1,2})\s*:\s*", re.IGNORECASE)
_NUMBERED_STEP: Final = re.compile(r"(?P<kind>step|part)\s+(?P<n>\d{1,2})\s*:\s*", re.IGNORECASE)


#: The line before a numbered list that lays the response out part by part: "Write:", "Output exactly three parts,
#: separated by one blank line, with no headings:", "Your reply has these parts, in this order:".
_LAYOUT_INTRO: Final = re.compile(
    r"(?:\b(?:write|output|return|produce|give|respond\s+with|reply\s+with|your\s+(?:response|answer|reply|output)"
    r"\s+(?:has|contains|is))\b[^.\n]{0,120}|\b(?:parts|pieces|in\s+this\s+order)\b[^.\n]{0,80}):\s*$",
    re.IGNORECASE,
)
#: An item of such a list that names a part: "1. A headline of ...", "2. The label text: ...", "3. One line ...".
_PART_ITEM: Final = re.compile(r"^\s*\d+[.)]\s+(?:an?|the|one|a\s+single)\s+[a-z]", re.IGNORECASE)
#: An item that only separates two parts: "2. A blank line."
_SEPARATOR_ITEM: Final = re.compile(r"^\s*\d+[.)]\s+(?:an?\s+|one\s+)?(?:blank|empty)\s+line\W*$", re.IGNORECASE)
#: A part that spans lines (a list, a table), after which a part's position no longer tells its line.
_MULTILINE_PART: Final = re.compile(r"\b(?:list|bullets?|bullet points|table|steps|points|paragraphs)\b", re.IGNORECASE)


def _layout_line(text: str, prompt: str) -> str | None:
    """The line of the response ("line 2") a numbered item is, where the list lays the response out one part per
    line ("Output exactly three parts, separated by one blank line: 1. A title of no more than 6 words. 2. The label
    text: 40-60 words ... 3. One line beginning ..."): its position among the parts, separators not counted. None
    unless every item names a part and none spans lines."""
    before = _lines_before_item(prompt, text)
    if before is None:
        return None
    first = _first_part_of_sequence(prompt, before)
    if first is not None:
        return first
    start = len(before) - 1
    while start > 0 and re.match(r"\s*\d+[.)]\s", before[start - 1]):
        start -= 1
    if start == 0 or not _LAYOUT_INTRO.search(before[start - 1]):
        return None
    items = list(itertools.takewhile(lambda line: re.match(r"\s*\d+[.)]\s", line), prompt.splitlines()[start:]))
    own = len(before) - 1 - start
    if (
        len(items) < 2
        or own >= len(items)
        or _SEPARATOR_ITEM.match(items[own])
        or not all(_PART_ITEM.match(item) or _SEPARATOR_ITEM.match(item) for item in items)
        or any(_MULTILINE_PART.search(item) for item in items)
    ):
        return None
    return f"line {sum(1 for item in items[: own + 1] if not _SEPARATOR_ITEM.match(item))}"


def _first_part_of_sequence(prompt: str, before: Sequence[str]) -> str | None:
    """ "paragraph 1" (or "line 1") for the first item of a list right below a layout's introduction when it is one
    paragraph (or line) and the next item goes on with "Then": "Output format:" over "- One paragraph of 70-110
    words." and "- Then a blank line, then one line exactly in this form: ...". The size is that part's, not the
    whole response's."""
    lines = prompt.splitlines()
    if len(before) < 2 or len(before) > len(lines) or not _LAYOUT_INTRO.search(before[-2]):
        return None
    item = lines[len(before) - 1]  # ``before`` ends at the item's marker
    part = re.match(r"(?:one|an?|a\s+single)\s+(?:short\s+)?(paragraph|line)\b", _clean(item), re.IGNORECASE)
    after = lines[len(before)] if len(before) < len(lines) else ""
    if part is None or not re.match(r"\s*(?:[-*•+]|\d+[.)])\s+then\b", after, re.IGNORECASE):
        return None
    return f"{part.group(1).lower()} 1"


def _numbered_part(numbered: re.Match[str]) -> str:
    """The section a numbered line or step is read as: "line 3" (for a row too), "step 4"."""
    kind = numbered.group("kind").lower()
    return f"{'line' if kind in ('line', 'row') else kind} {numbered.group('n')}"


def _reported_step(lowered: str, prompt: str) -> re.Match[str] | None:
    """ "Step 4: Write the final blurb, at most 50 words" where the prompt has each step reported on a line that
    opens with its label ('starting with "Step 1:"'): that labelled line's size, not the whole response's."""
    step = _NUMBERED_STEP.match(lowered)
    if step is None or not re.search(rf"[\"“'‘`]{step.group('kind')}\s+1\s*:", prompt, re.IGNORECASE):
        return None
    return step


#: What a numbered line opens with: 'Line 2: "Reason: " followed by one sentence', 'Line 1: starts with "Verdict:"'.
_LINE_OPENING: Final = re.compile(
    r"(?:(?:starts?|begins?|opens?)\s+with\s+)?[\"“'‘`](?P<text>[^\"”'’`\n]{1,40}?)\s*[\"”'’`]\s*(?:followed\s+by|then|\+|and)",
    re.IGNORECASE,
)
#: The values a numbered line holds one of: "exactly one of APPROVE, REVIEW, REMOVE", 'one of "yes" or "no"'.
_LINE_ONE_OF: Final = re.compile(
    r"\bone\s+(?:of|word)\s*:?\s*(?P<values>(?:[A-Z][A-Za-z_-]+|[\"“'‘`][^\"”'’`\n]{1,30}[\"”'’`])"
    r"(?:\s*(?:,\s*or|,|or|/|\|)\s*(?:[A-Z][A-Za-z_-]+|[\"“'‘`][^\"”'’`\n]{1,30}[\"”'’`]))+)"
)


def _numbered_line_drafts(text: str, prompt: str = "") -> Iterator[_Draft]:
    """What a prompt's fixed layout asks of one line, or of one labelled part ("**Severity:** must be exactly one
    word: Low, Medium or High"): what it opens with and the values it holds one of."""
    numbered = _NUMBERED_LINE.match(text)
    labelled = re.match(r"\*\*([A-Za-z][\w /&'-]{0,30}?):?\*\*:?\s*", text)
    if numbered is not None:
        line, rest = f"line {numbered.group('n')}", text[numbered.end() :]
    elif labelled is not None and _has_section(prompt, labelled.group(1)):
        line, rest = labelled.group(1).lower(), text[labelled.end() :]
    else:
        return
    opening = _LINE_OPENING.match(rest)
    if opening is not None:
        yield library.line_opening_draft(line, opening.group("text").strip())
    one_of = _LINE_ONE_OF.search(rest)
    if one_of is not None and len(values := _listed_values(one_of.group("values"))) >= 2:
        yield library.line_value_draft(line, values)


#: How the pieces are numbered: 'Number each tweet like "1/", "2/"', 'number the slides as "Slide 1:"'.
_NUMBERED_LIKE: Final = re.compile(
    r"\bnumber\s+(?:each|every|the|all|your)\s+(?:of\s+the\s+)?([a-z]+?)s?\s+(?:like|as|with|using|in\s+the\s+"
    r"form)\s*:?\s*[\"“'`]([^\"”'`\n]{0,12}\d[^\"”'`\n]{0,12})[\"”'`]",
    re.IGNORECASE,
)
#: What only the last piece holds: "Put hashtags only in the last tweet", "emojis only in the final paragraph".
_ONLY_IN_LAST: Final = re.compile(
    r"\b(?:put|use|add|include|place|keep|save)\s+(?:the\s+|any\s+|all\s+|your\s+)?(hashtags|emojis|links)\s+"
    r"(?:for\s+)?only\s+(?:in|at|on|for)\s+the\s+(?:last|final)\s+([a-z]+)\b"
    r"|\bonly\s+the\s+(?:last|final)\s+([a-z]+)\s+(?:may|can|should|gets?|has|have|must)\s+(?:have\s+|hold\s+|"
    r"contain\s+|include\s+|carry\s+)?(?:the\s+|any\s+)?(hashtags|emojis|links)\b",
    re.IGNORECASE,
)


#: Pieces that make up the whole response when it has several: nothing else stands between them.
_WHOLE_PIECES: Final = frozenset({"tweet", "post", "toot", "slide", "message", "part"})


def _part_layout_drafts(text: str) -> Iterator[_Draft]:
    """How a response of several pieces (a thread's tweets, a deck's slides) lays them out: each numbered in the
    form the sentence shows, and what only the last one holds."""
    numbered = _NUMBERED_LIKE.search(text)
    # a thread's tweets are the whole response; a recipe's steps may follow an introduction
    if numbered is not None and numbered.group(1).lower() in _WHOLE_PIECES and not _EXCLUDE_CUE.search(text):
        yield library.numbered_as_draft(numbered.group(1).lower(), numbered.group(2).strip())
    placed = _ONLY_IN_LAST.search(text)
    if placed is not None:
        unit = (placed.group(1) or placed.group(4)).lower()
        part = _part((placed.group(2) or placed.group(3)).lower())
        if part is not None and part[1] != "sentences":
            yield library.only_in_last_part_draft(unit, part)


#: An edge named by an input's name: "End the reply with the centre name on its own line" ({centre_name}).
_INPUT_EDGE: Final = re.compile(
    rf"\b(?P<verb>{_OPENING}|{_CLOSING})s?\s+(?:(?:the|your)\s+(?:reply|response|answer|message|email|note)\s+)?with\s+"
    r"(?P<phrase>(?:the|your|our)\s+[\w'’ -]{2,40}?)(?:\s+on\s+(?:its|a)\s+own\s+line|\s+as\s+(?:the|a|your)\s+"
    r"(?:sign-off|signature|closing(?:\s+line)?))?"
    # "Start with the lift name, then a colon": the mark after it, which an edge's reading ignores
    r"(?:,?\s+(?:then|followed\s+by)\s+(?:a\s+|an\s+)?(?:colon|dash|hyphen|full\s+stop|comma))?\s*[.;]?\s*$",
    re.IGNORECASE,
)
#: A mark the response ends with on a line of its own: "End with ### on its own line", "finish with -30-".
_MARK_LINE: Final = re.compile(
    rf"\b(?:{_CLOSING})s?\s+with\s+[\"“'`]?([^\w\s\"“”'`]{{2,6}}|-30-)[\"”'`]?\s+on\s+(?:its|a)\s+own\s+line\b",
    re.IGNORECASE,
)
#: What opens a ban on one part of a letter, up to the part's name: "No greeting or sign-off", "skip the salutation",
#: "Do not add any introduction"; never a ban on something else that spares the part ("no emojis except in the
#: sign-off").
_LEAVE_OUT: Final = (
    r"\b(?:no|never|don't|do\s+not|without|skip|avoid|omit)\b"
    r"(?:(?!\b(?:except|but|other\s+than|apart\s+from|besides|outside|only|save|counting|including|excluding)\b)"
    r"[^.;\n]){0,40}?\b"
)
_NO_GREETING: Final = re.compile(rf"{_LEAVE_OUT}(?:greetings?|salutations?|pleasantries)\b", re.IGNORECASE)
_NO_SIGN_OFF: Final = re.compile(rf"{_LEAVE_OUT}(?:sign[- ]?offs?|valedictions?)\b", re.IGNORECASE)
#: A ban on anything above the layout's first heading: "Don't put a title above the first heading".
_NOTHING_ABOVE: Final = re.compile(
    r"\b(?:no|never|don't|do\s+not)\b[^.;\n]{0,30}?\b(?:above|before)\s+the\s+first\s+(?:heading|section|header)\b",
    re.IGNORECASE,
)
#: A ban on anything before a label the sentence gives: "no text before **Date:**", 'nothing above "Summary:"'.
_NOTHING_BEFORE_LABEL: Final = re.compile(
    r"\b(?:no|never|don't|do\s+not)\b[^.;\n]{0,30}?\b(?:before|above|ahead\s+of)\s+"
    r"(?:\*\*(?P<bold>[^*\n]{1,40})\*\*|[\"“`](?P<quoted>[^\"”`\n]{1,40})[\"”`])",
    re.IGNORECASE,
)
#: The first markdown heading a prompt's layout lists on a line of its own ("## Overview").
_FIRST_HEADING: Final = re.compile(r"^\s{0,3}#{1,6}\s+([^\n{}<>]{1,60}?)\s*$", re.MULTILINE)
#: A ban on any text before the answer proper: "Do not add any introduction", "no preamble".
_NO_INTRODUCTION: Final = re.compile(rf"{_LEAVE_OUT}(?:intro(?:duction)?s?|preambles?)\b", re.IGNORECASE)
#: A line the response holds somewhere, by what it opens with: 'A line starting "Matches:" with two examples'.
_SOME_LINE: Final = re.compile(
    r"\b(?:a|one|another|a\s+separate|a\s+new)\s+line\s+(?:that\s+)?(?:start|begin|open)(?:s|ing)\s+(?:with\s+)?"
    r"[\"“'‘`](?P<text>[^\"”'’`\n]{1,30}?)\s*[\"”'’`]",
    re.IGNORECASE,
)


def _edge_is_a_part(lowered: str) -> bool:
    """Whether the response's edge is the part the sentence names ("start with the heading "X"", "end with the
    line "Y""), rather than the part's own edge ("the subject line must start with "X"")."""
    scope = _scope(lowered)
    return (
        scope is not None
        and re.search(rf"\b(?:{_OPENING}|{_CLOSING})s?\s+with\s+(?:the|a|an|this|one)\s+{re.escape(scope)}\b", lowered)
        is not None
    )


def _edge_of_a_part(lowered: str, verb: re.Match[str] | None) -> bool:
    """Whether the edge a sentence names is a part's rather than the response's (:data:`_PART_BEFORE_AN_EDGE`)."""
    return verb is not None and bool(
        _PART_BEFORE_AN_EDGE.search(lowered[: verb.start()])
        or _PART_AT_AN_EDGE.match(lowered, verb.end())
        or re.match(r"(?:after|below|under|following)\s+the\b", lowered)  # "After the table, write one ..."
    )


#: Bullets the sentence allows rather than asks for: "Hyphen bullets OK", "bullet points are fine", "you may use
#: bullets".
_BULLETS_ALLOWED: Final = re.compile(
    r"\bbullet[\w ]{0,15}?\s+(?:are\s+|is\s+)?(?:ok|okay|fine|allowed|permitted|acceptable)\b"
    r"|\b(?:may|can|could)\s+(?:also\s+)?(?:use\s+)?(?:[\w-]+\s+){0,2}?bullet"
)


def _formats(text: str, vocabulary: _Vocabulary, written: str = "") -> Iterator[_Draft]:
    """Format drafts of ``text`` (the sentence as read); ``written`` is the sentence as the prompt has it, where a
    list below it is found ("these markdown headings, in this order:", read as "these headings, ...")."""
    lowered = text.lower()
    # not "ACTION: <tool_name>(<arguments as one JSON object>)": JSON inside a template's slot is a part of a line
    if re.search(r"\bjson\b", re.sub(r"<[^<>\n]*>|\[[^\[\]\n]*\]", " ", lowered)):
        listed_at = re.search(r"\b(?:list|array)\b", lowered)
        # "an object whose key "days" is a list", "JSON with a "reasons" key holding a list": an object
        object_at = re.search(r"\b(?:object|keys?|fields?|propert(?:y|ies))\b", lowered)
        # "a JSON array of objects" is a list
        if listed_at and (object_at is None or listed_at.start() < object_at.start()):
            yield _Draft(
                "json_list",
                PRESENTATION_FORMAT,
                "The response is a JSON list.",
                "isinstance(checks.json_value(response), list)",
                {"family": "json_list"},
            )
        else:
            # 'keys: "label" (one of "positive" or "negative")': what a parenthesis quotes is a key's value
            unglossed = _PARENTHESIS.sub(" ", text)
            keys = _quoted(unglossed) if re.search(r"\b(?:keys?|fields?|properties|attributes)\b", lowered) else []
            listed = _LISTED_KEYS.search(text)
            if not keys and listed:  # "with the keys title, summary and tags"
                keys = _split_keys(listed.group(1))
            yield json_draft(keys, object_only=re.search(r"\bjson\s+object\b", lowered) is not None)
    if re.search(r"\bmarkdown\b", lowered) and not (
        markdown_refused(lowered)
        and re.search(r"\b(?:apart from|except|other than|besides|aside from)\b|\bno\s+other\s+markdown\b", lowered)
    ):  # "no markdown ... apart from numbered steps": some markdown is allowed, and the sentence's other bans say which
        yield markdown_draft(present=not markdown_refused(lowered))
    if (
        re.search(r"\bbullet(?:ed)?(?: points?| list)?\b|\bbullets\b", lowered)
        and not re.search(r"\b(?:no|not|without|avoid|don't|never|rather than|instead of)\b[^.]{0,40}bullet", lowered)
        and not _BULLETS_ALLOWED.search(lowered)  # "Hyphen bullets OK": allowed, not asked for
    ):
        yield _count_draft("bullets", 1, None, None)
    numbered = re.search(  # "a numbered list", "numbered steps", "Number the steps"
        r"\bnumbered\s+(?:list|steps|instructions|points|items)\b|^\W*number\s+(?:the|each|your)\s+(?:steps|items|points)\b",
        lowered,
    )
    if numbered and not re.search(r"\b(?:no|not|without|avoid|don't|never)\b[^.]{0,30}number", lowered):
        yield _count_draft("numbered_items", 1, None, None)
    subject = re.search(
        r"\b(?:include|add|write|give|with|start\s+with|begin\s+with)\s+(?:a|an|the)\s+subject\s+line\b"
        # "No subject line in Slack", "no subject in chat", not "no subject matter"
        r"|\bno\s+subject(?:\s+line\b|(?=\s*(?:[,.;:)]|$|\s+in\b)))",
        lowered,
    )
    if subject is not None and not _conditional_at(text, subject.start()):  # "Include a subject line", "Don't ..."
        refused = _negation(text[: subject.end()]) is not None
        yield _Draft(
            "no_subject_line" if refused else "has_subject_line",
            PRESENTATION_FORMAT,
            "Has no subject line." if refused else "Has a subject line (“Subject: ...”).",
            f"{'not ' if refused else ''}checks.has_subject_line(response)",
            {"family": "subject_line", "present": not refused},
        )
    if re.search(r"\b(?:a|in a|as a|markdown) table\b", lowered):
        yield _Draft(
            "markdown_table",
            PRESENTATION_FORMAT,
            "Contains a markdown table.",
            "checks.has_table(response)",
            {"family": "table"},
        )
    # "wrap the code in triple backticks", not "the text delimited by three backticks" (the input's fence)
    fenced = (
        r"\b(?:wrap|enclos|put|place|format|surround)\w*\b[^.]{0,40}?\b(?:in|with|between|inside)\s+"
        r"(?:triple|three)\s+backticks"
    )
    if re.search(rf"\bcode (?:block|snippet|example)s?\b|{fenced}", lowered) and not _EXCLUDE_CUE.search(text):
        yield _count_draft("code_blocks", 1, None, None)
    headings = r"\b(?:use|add|include|with|organi[sz]e\w*|structure\w*)\s+(?:\w+\s+){0,2}?(?:headings|headers)\b"
    listed_headings = _headings_listed_after(vocabulary.prompt, written or text)
    for title in listed_headings:  # "Use exactly these headings:" over "- Date of loss", "- Circumstances (...)"
        yield _heading_draft(title, PRESENTATION_FORMAT)
    if len(listed_headings) >= 2 and _IN_ORDER.search(text):
        yield library.headings_in_order_draft(listed_headings)
    if re.search(headings, lowered) and not _EXCLUDE_CUE.search(text) and not listed_headings + _slashed_titles(text):
        yield _count_draft("headings", 1, None, None)
    for tag in dict.fromkeys(_ASKED_TAG.findall(text)):  # "wrap your final answer in <answer></answer> tags"
        if not _EXCLUDE_CUE.search(text):
            yield library.tag_draft(tag)
    case = _LETTER_CASE.search(lowered)
    of_a_part = (
        re.search(  # "the animal's common name in ALL CAPS", "First line: ...": that part's case
            r"\b(?:name|title|headline|heading|line|word|label|subject|acronym)s?\s+(?:\w+\s+){0,2}?in\s+(?:all\s+)?"
            r"(?:caps|upper|lower)",
            lowered,
        )
        or re.search(  # "Use ALL CAPS for the headline"
            r"\b(?:caps|capitals|upper[\s-]?case|lower[\s-]?case)\s+(?:for|on|in)\s+(?:the|each|every|all|your|its)\s+"
            r"(?:\w+\s+)?(?:name|title|headline|heading|line|word|label|subject|acronym|key|field)s?\b",
            lowered,
        )
        or _POSITION_LABEL.match(lowered)
    )
    if (  # "answer in lowercase", "write everything in all caps" (not a reason's ban: "because it has no lowercase")
        case and not of_a_part and not _EXCLUDE_CUE.search(re.split(r"\b(?:because|since)\b", text)[0])
    ):
        yield library.letter_case_draft("lower" if case.group(1) == "lower" else "upper")
    for unit, words in (("hashtags", r"hashtags?"), ("emojis", r"emojis?|emoticons?")):  # "use relevant hashtags"
        asked = rf"\b(?:use|add|include|with|end with|finish with)\s+(?:[\w-]+\s+){{0,2}}?(?:{words})\b"
        if re.search(asked, lowered) and not _EXCLUDE_CUE.search(text):
            yield _count_draft(unit, 1, None, None)
    titles = list(dict.fromkeys("".join(title) for title in _TITLED_SECTION.findall(text)))
    titles += [title for title in _slashed_titles(text) if title not in titles]
    if re.search(r"\b(?:sections?|headings?|headers?)\b[^.*]{0,30}:?\s*\*\*", text, re.IGNORECASE):
        titles += [title.strip(" :") for title in re.findall(r"\*\*([^*\n]{1,40})\*\*", text) if title not in titles]
    if re.search(r"\b(?:sections?|headings?|headers?)\b[^.\"“]{0,40}:\s*#{1,6}\s", text, re.IGNORECASE):
        # "these three markdown headings, in this order: ## Decisions, ## Action items, ## Open questions."
        marked = re.findall(r"(?<![#\w])#{1,6}\s+([^#,;\n]{1,40}?)\s*(?=,|;|\.(?:\s|$)|\s+(?:and|or)\s+#|$)", text)
        titles += [title.strip() for title in marked if title.strip() and title.strip() not in titles]
    if re.search(r"\b(?:sections?|headings?|headers?)\b[^.\"“]{0,30}:\s*[\"“]#", text, re.IGNORECASE):
        # 'three sections, in this order: "## Children and Families", "## Adults", "## Notices"'
        marked = re.findall(r"[\"“](#{1,6}\s*[^\"”\n]{1,40})[\"”]", text)
        titles += [title.lstrip("# ").strip() for title in marked if title.lstrip("# ").strip() not in titles]
    # a section's title is no phrase, nor is a pattern ("a title in the imperative mood ("Fix ...", "Add ...")"),
    # nor an example of what complies ("start with the colour and grade, e.g. `Yellow · V3 — `")
    # and not what one of its sentences asks under a condition ('If you find nothing, write "No issues found."')
    examples = set(_literal_quotes(text, _EXAMPLE_FRAME))
    quoted = [
        phrase
        for phrase in _quoted(text)
        if phrase.lstrip("# ") not in titles
        and not phrase.endswith(("...", "…"))
        and phrase not in examples
        and not _conditional_at(text, text.find(phrase))
    ]
    # "begin your answer with", "the first line is the subject line, starting with "Subject: ""
    # 'Start "Dear {resident_name}," and end "Waste and Recycling Team"': the quotation right after the verb
    start = (
        re.search(rf"\b(?:{_OPENING})s?\s+(?:\w+\s+){{0,2}}?with\b", lowered)
        or (re.search(rf"\b(?:{_OPENING})(?:ing|ning)\s+with\b", lowered) if _scope(lowered) in _FIRST_LINES else None)
        or re.search(rf"(?:^|[.;:]\s+|\band\s+)(?:{_OPENING})s?\s+(?=[\"“])", lowered)
    )
    end = re.search(rf"\b(?:{_CLOSING})s?\s+(?:\w+\s+){{0,2}}?with\b", lowered) or re.search(
        rf"(?:^|[.;:]\s+|\band\s+)(?:{_CLOSING})s?\s+(?=[\"“])", lowered
    )
    # "Output a single line starting with "HINT: "": the line is the response, and its edge the response's
    whole_line = re.search(
        r"\b(?:output|write|return|give|reply\s+with|respond\s+with)\s+(?:a\s+single|one|only\s+one|exactly\s+one)\s+"
        r"line\s+(?:that\s+)?(?:start|begin|open)(?:s|ing)?\s+with\b",
        lowered,
    )
    start = start or (whole_line if not end else None)
    part = _scope(lowered)
    opening_quote = next((q for q in quoted if start and text.find(q, start.end()) >= 0), None)
    if (
        opening_quote is not None
        and part is not None
        and part not in _FIRST_LINES
        and _has_section(vocabulary.prompt, part)
        and not _edge_is_a_part(lowered)
    ):  # '"parent_message": a message ... that starts with "Dear parent of {student_name},"': that part's opening
        yield library.line_opening_draft(part, _slot_filled(opening_quote, vocabulary))
        start = None
    if (
        (start or end)
        and quoted
        and not whole_line
        and not (start and _scope(lowered) in _FIRST_LINES)  # the first line's opening is the response's
        and not _edge_is_a_part(lowered)  # 'Start with the heading "# What's On"': the response opens with it
        and (_scope(lowered) in _PARTS or _edge_of_a_part(lowered, start or end))
    ):
        # "The subject line must start with 'Follow-up:'", "its last sentence begins with 'Attendees will'",
        # "finish with one line starting with 'Advice:'": the part's edge, which the response's own need not be
        yield phrases_draft([quoted[0] if start else quoted[-1]], exclude=False)
        start = end = None
    if start and quoted:  # the quotes after the opening verb: 'addressed as "you", and don't open with "Great ..."'
        opening_quotes = [q for q in quoted if text.find(q, start.end()) >= 0] or quoted
        opening = _slot_filled(_shared_by_alternatives(text, opening_quotes, end=False), vocabulary)
        after = text[text.find(opening_quotes[0]) + len(opening_quotes[0]) :].lstrip("\"”' ")
        value = _VALUE_AFTER.match(after)
        field = vocabulary.input_named(value.group("phrase")) if value is not None else None
        if opening and field is not None and opening.strip() == opening_quotes[0].strip():
            # 'Start with one line that says "ID&V: " followed by exactly the value in the ID&V status field'
            opening = f"{opening.rstrip()} {{{field}}}"
        if opening:
            yield edge_draft(opening, end=False, refused=edge_refused(text, end=False))
    elif (
        start
        and re.search(r"\bwith (?:the|a|an)\s+(?:[\w-]+\s+)?(?:name|title|heading|header)\b", lowered)
        and not edge_refused(text, end=False)
    ) or (_NO_INTRODUCTION.search(text) and re.search(r"\b(?:sections?|headings?|headers?)\b", lowered)):
        # "Do not add any introduction ... outside the four sections": the first section's title opens it
        yield _Draft(
            "starts_with_a_title",
            PRESENTATION_FORMAT,
            "The first line is a title.",
            "checks.starts_with_title(response)",
            {"family": "starts_with_title"},
        )
    last = _last_line_label(text)
    # the quotes after the closing verb: 'Start with "Hi <first name>," and finish with these two lines:' ends with
    # neither of its quotes
    closing_quotes = [q for q in quoted if end and text.find(q, end.end()) >= 0]
    if closing_quotes and (last is None or last.strip() != closing_quotes[-1].strip()):  # a last line's label
        ending = _slot_filled(_shared_by_alternatives(text, closing_quotes, end=True), vocabulary)
        after = text[text.find(closing_quotes[-1]) + len(closing_quotes[-1]) :]
        if ending and ending != closing_quotes[-1] and ending.endswith(":"):  # 'End with "Verdict: A" or "B"'
            last = last or ending  # what the alternatives share opens the last line
        elif ending and _MORE_LINES_AFTER.match(after):
            # "finish with 'With warm thanks,' then the signatory's name and role on separate lines": a line of
            # the ending, not its last words
            yield library.line_start_draft(ending)
        elif ending:
            yield edge_draft(ending, end=True, refused=edge_refused(text, end=True))
    if _CLOSING_BLOCK.search(text) and not quoted:  # "End the email with this signature block, reproduced exactly:"
        block = _block_after(vocabulary.prompt, written or text)
        if block:
            yield edge_draft("\n".join(block), end=True)
    closing_line = _CLOSING_LINE.search(text)
    if closing_line is not None and re.search(r"[<\[]|\.\.\.|…", closing_line.group("text")):
        closing_line = None  # "the last line must be: Verdict: <pass or fail>": a form to fill, not its words
    if closing_line is not None and not quoted:  # "End with this exact closing line: Ride on! The Team"
        closing = closing_line.group("text").strip()
        # the whole line of the prompt, which the sentence splitter may have cut: "... must be: Exam date: {date}.
        # Good luck!"
        whole = re.search(re.escape(closing) + r"[^\n]*", vocabulary.prompt)
        yield edge_draft(whole.group().strip() if whole else closing, end=True)
    first_form = _FIRST_LINE_FORM.search(text)
    if first_form is not None and FORM_SLOT.search(first_form.group("form")):
        numbers = " ".join(_WHOLE_NUMBER_SLOT.findall(text[first_form.end() :]))
        yield library.line_form_draft("first", first_form.group("form"), numbers=numbers)
    answer_line = _LAST_LINE_NUMBER.search(text)
    if answer_line is not None:  # "The last line must contain only Answer: and the number, with no units"
        yield library.line_form_draft("last", f"{answer_line.group('label')} N", values="N")
    ends = _FIRST_AND_LAST.search(text)
    if ends is not None and not _conditional_at(text, ends.start()):
        yield library.first_and_last_draft(ends.group("first"), ends.group("last"))
    first = _FIRST_LINE.search(text)
    if (
        first is not None
        and not quoted
        and re.search(r"\bexactly\b|\bheader\b", first.group(), re.IGNORECASE)
        and not FORM_SLOT.search(first.group("text"))
    ):  # "The first line must be exactly this header: name,date,boat_type,hours": that line and nothing more (a line
        # with slots, "## {product_name} {version}", opens the response filled in)
        yield library.line_form_draft("first", first.group("text").strip())
    elif first is not None and not quoted:  # "The first line should be: Dear team,": how it opens
        yield edge_draft(first.group("text").strip(), end=False)
    if last is not None:  # 'give the label on the last line in the format "Label: X"', "on the last line write Answer:"
        yield library.last_line_draft(last)
    first_heading = _FIRST_HEADING.search(vocabulary.prompt) if _NOTHING_ABOVE.search(text) else None
    if first_heading is not None:  # "Don't put a title above the first heading" of "## Overview", "## Key Terms"
        yield edge_draft(first_heading.group(1).strip(), end=False)
    before_label = _NOTHING_BEFORE_LABEL.search(text)
    if before_label is not None and not _conditional_at(text, before_label.start()):  # "no text before **Date:**"
        yield edge_draft((before_label.group("bold") or before_label.group("quoted")).strip(), end=False)
    if _NO_GREETING.search(text) and not _conditional_at(text, 0):  # "No greeting or sign-off."
        yield library.no_greeting_draft()
    if _NO_SIGN_OFF.search(text) and not _conditional_at(text, 0):
        yield library.no_sign_off_draft()
    some_line = _SOME_LINE.search(text)
    if some_line is not None and last is None and not _conditional_at(text, some_line.start()):
        yield library.line_start_draft(some_line.group("text").strip())
    if not quoted:  # "Begin with the line Dear residents, and end with the sign-off line {manager_name}, ..."
        for edge in _UNQUOTED_EDGE.finditer(text):
            closing = re.match(_CLOSING, edge.group("verb"), re.IGNORECASE) is not None
            yield edge_draft(edge.group("text").strip(), end=closing, refused=edge_refused(text, end=closing))
    mark_line = _MARK_LINE.search(text)
    if mark_line is not None:  # "End with ### on its own line": a mark no wording check can see
        mark = mark_line.group(1)
        yield _Draft(
            f"last_line_is_{re.sub(r'[^a-z0-9]+', '', mark.lower()) or 'a_mark'}",
            PRESENTATION_FORMAT,
            f"The last line is “{mark}”.",
            f"checks.last_line(response) == {library.literal(mark)}",
            {"family": "last_line_is", "line": mark},
        )
    named_edge = _INPUT_EDGE.search(text)
    if named_edge is not None and not quoted:  # "End the reply with the centre name on its own line"
        field = vocabulary.input_named(named_edge.group("phrase"))
        closing = re.match(_CLOSING, named_edge.group("verb"), re.IGNORECASE) is not None
        if field is not None:
            yield edge_draft(f"{{{field}}}", end=closing, refused=edge_refused(text, end=closing))
    if end and not quoted and re.search(r"\bwith (?:a|an|one)\b[^.?!]{0,30}?\bquestion\b", lowered):
        yield ends_with_question_draft(refused=edge_refused(text, end=True))
    sign_off = re.search(
        # the verb ("sign off as", "signed with"), not the noun ("warning signs as bullet points")
        r"(?<!\bwarning )(?<!\bthe )(?<!\ba )(?<!\bany )(?<!\bno )(?<!\bthese )(?<!\bthose )"
        r"\b(?:signs\s+off|sign(?:ed)?(?!\s+(?:in|up|into|out|on)\b)(?:\s+off)?)\s+(?:\w+\s+){0,2}?(?:as|with)\s+(.+?)[.!]?$"
        r"|\bsign(?:s|ed)?\s+off\s+([\"“][^\"”]+[\"”])"  # 'sign off "Northgate Customer Care"'
        r"|\bsign\s+(?:the\s+\w+|it)\s+([\"“][^\"”]+[\"”])"  # 'Sign the email "Best, Jordan"'
        # "End with your name, Sam."
        r"|\b(?:end|finish|close|sign)\w*\s+(?:\w+\s+){0,2}?with\s+(?:your|my|the\s+sender's)\s+name\s*[,:(]\s*"
        r"([A-Z][\w'’-]*(?:\.?\s+[A-Z][\w'’-]*){0,3})\)?[.!]?$",
        text,
        re.IGNORECASE,
    )
    signed = next((group for group in sign_off.groups() if group), "") if sign_off else ""
    # the quotation after the verb, not one elsewhere ('start with "Hi {first_name}," and sign off with ...')
    own_quotes = [phrase for phrase in quoted if phrase in signed]
    signature = own_quotes[-1] if own_quotes else signed.strip(" \"'“”‘’")
    first_name = bool(re.search(r"\bfirst\s+name\b", signature, re.IGNORECASE))  # "{coordinator_name}'s first name"
    placeholder = PLACEHOLDER_PATTERN.search(signature)
    if not own_quotes and placeholder:  # "the sender's name, {sender_name}": the input (the first: "{recruiter_name},
        signature = placeholder.group()  # Talent Acquisition, on behalf of {manager_name}" is signed by the recruiter)
    elif not own_quotes and re.search(r"\b(?:your|their|his|her|our|name|names)\b|['’]s\b", signature, re.I):
        signature = ""  # "sign off with your name": which name is not in the sentence
    if signature and (own_quotes or len(signature.split()) <= 6):
        yield _Draft(
            f"signs_off_as_{_slug(signature, 32)}",
            PRESENTATION_FORMAT,
            f"Signs off as “{signature}”{' (the first name)' if first_name else ''}.",
            f"checks.signed_by(response, {library.phrase_code(signature)}{', first_name=True' if first_name else ''})",
            {"family": "signed_by", "phrase": signature, **({"first_name": True} if first_name else {})},
        )
    section = re.search(
        r"\b(?:add|include|write|create|provide|with|have)\s+(?:a|an|the)\s+(?:short\s+|brief\s+)?"
        r"(?:section|heading|header|part)\s+(?:about|on|for|called|named|titled|listing)\s+"
        r"(?:the\s+)?([a-z][a-z\-]+)",
        lowered,
    )
    named = re.search(r"\b(?:add|include|write|create|provide)\s+(?:a|an|the)\s+([a-z][a-z\-]+)\s+section\b", lowered)
    for match in (section, named):
        if match:
            yield _heading_draft(match.group(1), PRESENTATION_FORMAT)
    titles = [  # "## <Room>": a slot; 'each as a markdown "## " heading': the mark, no title
        title for title in titles if title.strip(" :*#") and not re.search(r"<[^<>]*>|\[[^\[\]]*\]|\{[^{}]*\}", title)
    ]
    if _negation(text) is None:  # 'a "## Steps" section', 'a section titled "Next steps"' (a ban under a condition,
        # "If a section has no events, keep the heading", bans no section)
        for title in titles:
            yield _heading_draft(title, PRESENTATION_FORMAT)
        if len(titles) >= 2 and _IN_ORDER.search(text):  # "exactly these sections, in order: **Impact**, ..."
            yield library.headings_in_order_draft(titles)


#: "Priority must be one of "low", "medium" or "high"": a value from a listed set.
_ONE_OF: Final = re.compile(
    r"[\"“']?(?P<key>[A-Za-z_][\w-]{0,30})[\"”']?(?:\s+(?:field|key|value|property))?"
    r"\s+(?:must|should|has\s+to|needs\s+to|can\s+only|may\s+only|shall)"
    r"\s+be\s+(?:(?:one\s+of|either)\b\s*:?|(?=[\"“]))\s*(?P<values>.+)$",
    re.IGNORECASE,
)


#: "Answer with the label only", "reply with only the category": the whole answer is one of the prompt's labels.
_ONLY_THE_LABEL: Final = re.compile(
    r"\b(?:answer|respond|reply|output|return)\s+(?:with\s+)?(?:only\s+the\s+(?:label|category|class)\b|the\s+"
    r"(?:label|category|class)(?:\s+name|\s+word)?\s+only\b)",
    re.IGNORECASE,
)
#: The labels a prompt lists: "into one of these labels: crash, ui, performance, data-loss, other".
_LISTED_LABELS: Final = re.compile(
    r"\bone\s+of\s+(?:these|the\s+following)\s+(?:labels|categories|classes)\s*:\s*([^.\n]+)"
    # "One of AUTO, PROPERTY, HEALTH or OTHER (use OTHER if none fits)": a bare list of at least three
    r"|\bone\s+of\s*:?\s+((?:[\"'“]?[\w-]+[\"'”]?\s*,\s*){2,}(?:or\s+)?[\"'“]?[\w-]+[\"'”]?)(?=\s*[.(\n]|$)",
    re.IGNORECASE,
)


#: The set a label or a key's values come from: "Allowed reason labels: price, missing_feature, bugs, other."
_ALLOWED: Final = re.compile(
    r"\b(?:allowed|valid|possible|permitted)\s+(?:[\w-]+\s+){0,2}?(?:labels|values|categories|tags|codes)\s*:"
    r"\s*([^.\n]+)",
    re.IGNORECASE,
)


def _listed_values(listing: str) -> list[str]:
    """ "price, missing_feature, bugs or other" -> its values, quotes aside."""
    values = [value.strip(" \"'“”`") for value in re.split(r",\s*(?:or\s+|and\s+)?|\s+or\s+", listing)]
    return [value for value in values if value]


#: The answers a sentence allows, listed in it: quoted ('"YES" or "NO"'), bare "yes or no", or after a colon or in
#: brackets ("one word: positive, negative or neutral", "the category name only (billing, technical, account)").
_OPTION: Final = r"[a-z][\w-]*(?:\s+(?!or\b)[a-z][\w-]*)?"  # "spam", "not spam"; "or" only between options
_ANSWER_OPTIONS: Final = re.compile(
    r"(?P<quoted>[\"“][^\"”\n]{1,25}[\"”](?:\s*(?:,\s*(?:or\s+)?|\s+or\s+|\s*/\s*)[\"“][^\"”\n]{1,25}[\"”])+)"
    r"|(?<!\ba\s)\b(?P<yes_no>yes\s+or\s+no)\b(?!\s+(?:questions?|answers?)\b|-)"
    rf"|(?::|\bone\s+of)\s*(?P<listed>{_OPTION}(?:(?:\s*,\s*(?:or\s+)?|\s+or\s+){_OPTION})+)\s*\.?$"
    r"|\((?P<bracketed>(?:[a-z][\w-]*\s*,\s*)+(?:or\s+)?[a-z][\w-]*)\)",
    re.IGNORECASE,
)
#: A verb of answering, and a word that makes the options the whole answer: "Answer only with yes or no", "Reply
#: with just", "Respond with one word:", "Output nothing but".
_ANSWER_VERB: Final = re.compile(r"^(?:please\s+)?(?:answer|reply|respond|output|return|say)\b", re.IGNORECASE)
_ONLY_AN_OPTION: Final = re.compile(
    r"\b(?:only|just|nothing\s+(?:else|but)|(?:one|a\s+single|single)\s+word|exactly\s+one\s+of)\b", re.IGNORECASE
)
#: What makes an answer more than the option: a reason, a line among others, a field.
_MORE_THAN_AN_OPTION: Final = re.compile(
    r"\b(?:then|followed\s+by|first|line|reasons?|explain|explanation|because|sentences?|json|key|field|if|when"
    r"|unless|otherwise|and\s+(?:a|an|one|the)\b)",
    re.IGNORECASE,
)


#: A date form as prompts write it ("YYYY-MM-DD", "DD/MM/YYYY", "D MMM YYYY"), or "ISO 8601".
_DATE_FORM: Final = re.compile(
    r"(?<![\w-])(?P<form>(?:YYYY|DD|MM|D|M)(?P<sep>[-/. ])(?:MMM|MM|DD|M|D)(?P=sep)(?:YYYY|YY|DD|D))(?![\w-])"
    r"|\bISO[\s-]?8601\b"
)
#: The key a date form is said of, opening its line: "- pickup_date MUST be in YYYY-MM-DD format", '"key_date":
#: "YYYY-MM-DD" or null', "loss_date: YYYY-MM-DD", "Date: the visit date as YYYY-MM-DD".
_DATE_KEY: Final = re.compile(
    r"^\s*(?:[-*•]\s+|\d+[.)]\s+)?[\"`]?(?P<key>[A-Za-z][A-Za-z0-9_]{0,30}(?:\s[A-Za-z][a-z0-9_]{0,20})?)[\"`]?\s*"
    r"(?::|\(|\s(?:must|MUST|should|is|has\s+to)\b)"
)
#: Dates in general: "Dates as DD/MM/YYYY", "Format all dates as ...", "write every date in ISO 8601".
_DATES_IN_GENERAL: Final = re.compile(r"\b(?:all|every|any)\s+dates?\b|^\W*dates\b|\bformat\s+(?:the\s+)?dates\b", re.I)


#: The label of the output's part a sentence is said under: "WEB BODY: ... End with "We'll update this page"", "SMS:
#: ... Start with "Kingsmere Council:"".
_PART_LABEL: Final = re.compile(r"^\**([A-Za-z][\w /&'-]{0,30}?)\**\s*:\s")
#: Checks of a text's edges, which a part's rule puts at that part's edges.
_EDGE_FAMILIES: Final = frozenset(
    {"starts_with", "ends_with", "not_starts_with", "not_ends_with", "ends_with_question"}
)


def _at_the_part_s_edge(draft: _Draft, part: str) -> _Draft:
    """An edge check said under a part's label ("WEB BODY: ... End with ...") reads that part's text, not the whole
    response's (whose end is the next part)."""
    if draft.check is None or draft.check.get("family") not in _EDGE_FAMILIES:
        return draft
    section = f"checks.section(response, {library.literal(part)})"
    return dataclasses.replace(
        draft,
        slug=f"{draft.slug}_in_{_slug(part, 20)}",
        description=f"In the {part} part: {draft.description[0].lower()}{draft.description[1:]}",
        expression=re.sub(r"\(response\b", f"({section}", draft.expression, count=1),
        check={**draft.check, "section": part},
    )


def _template_below(prompt: str, sentence: str) -> list[str]:
    """The lines of the JSON template right below a sentence that ends in a colon ("with exactly these keys:" over
    '{{ "incident_date": "YYYY-MM-DD or null", ... }}'), which the prompt shows as a document, not as sentences."""
    if not sentence.rstrip().endswith(":"):
        return []
    block = _next_block(prompt, sentence)
    return block if block and block[0].strip() in ("{", "{{") else []


#: A key of a JSON template and the words its value holds, at any depth: '"incident_time": "HH:MM in 24-hour time"'.
_TEMPLATE_LINE: Final = re.compile(r'"(?P<key>[A-Za-z_][\w-]{0,40})"\s*:\s*"(?P<value>[^"\n]*)"')
#: Values offered as alternatives inside one string: "near_miss | first_aid | medical_treatment".
_PIPED_VALUES: Final = re.compile(r"^\s*([a-z0-9_][\w-]*(?:\s*\|\s*[a-z0-9_][\w-]*)+)\s*$")
_CLOCK_FORM: Final = re.compile(r"(?<![\w-])HH:MM(?::SS)?(?![\w-])")


def _template_value_drafts(lines: list[str]) -> list[_Draft]:
    """What a JSON template's values say of their keys: a set of values ('"incident_type": "near_miss | first_aid"')
    at any depth, a date form ('"incident_date": "YYYY-MM-DD or null"') or a 24-hour time ("HH:MM")."""
    drafts = []
    for entry in (found for line in lines for found in _TEMPLATE_LINE.finditer(line)):
        key, value = entry.group("key"), entry.group("value")
        if (piped := _PIPED_VALUES.match(value)) is not None:
            drafts.append(library.nested_value_set_draft(key, re.split(r"\s*\|\s*", piped.group(1))))
        elif (form := _DATE_FORM.search(value)) is not None and form.group("form"):
            drafts.append(library.date_form_draft(form.group("form"), key))
        elif (clock := _CLOCK_FORM.search(value)) is not None:
            drafts.append(library.date_form_draft(clock.group(0), key))
    return drafts


def _date_form_drafts(lines: str, prompt: str) -> Iterator[_Draft]:
    """The form dates are written in, for the key a line gives it for ("pickup_date MUST be in YYYY-MM-DD format";
    each key its own in "invoice_date (YYYY-MM-DD), due_date (YYYY-MM-DD or null)"), or for every date the
    response writes ("Dates as DD/MM/YYYY, times in 24h")."""
    keys = set(_template_keys(prompt))
    for line in lines.splitlines():
        forms = [
            found
            for found in _DATE_FORM.finditer(line)
            if not _negation(line[max(0, found.start() - 12) : found.start()])
        ]
        if not forms:
            continue
        form = next((found.group("form") for found in forms if found.group("form")), "YYYY-MM-DD")
        paired = re.findall(r"\b([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\s*\(\s*(" + _DATE_FORM.pattern + r")", line)
        if len(paired) >= 2:  # "invoice_date (YYYY-MM-DD), due_date (YYYY-MM-DD or null)": each key its own
            for key, key_form, *_ in paired:
                yield library.date_form_draft(key_form, key)
            continue
        keyed = _DATE_KEY.match(line)
        key = keyed.group("key") if keyed is not None else ""
        if key and (key in keys or "_" in key or (key[0].isupper() and _has_section(prompt, key))):
            yield library.date_form_draft(form, key)
        elif _DATES_IN_GENERAL.search(line):
            yield library.date_form_draft(form)


def _label_only(text: str, prompt: str) -> Iterator[_Draft]:
    """``Answer with the label only`` where the prompt lists its labels: the answer is one of them (any case). And
    a sentence that lists the answers it allows itself ('Reply "YES" or "NO".', "Answer only with yes or no.",
    "Respond with one word: positive, negative or neutral."): the whole answer is one of them."""
    bare = re.search(r"\b(?:no|without)\s+punctuation\b", text, re.IGNORECASE) is not None
    listed = _LISTED_LABELS.search(prompt) or _ALLOWED.search(prompt)
    if _ONLY_THE_LABEL.search(text) and listed is not None:
        labels = _listed_values(next(group for group in listed.groups() if group))
        if len(labels) >= 2:
            yield library.label_draft(labels, bare=bare)
            return
    stripped = text.strip()
    options = _ANSWER_OPTIONS.search(stripped)
    if options is None or not _ANSWER_VERB.match(stripped) or _MORE_THAN_AN_OPTION.search(stripped):
        return
    # 'Reply "YES" or "NO".' says so by itself; bare words need "only", "just", "one word"
    alone = options.group("quoted") is not None and not stripped[options.end() :].strip(" .")
    if not (alone or _ONLY_AN_OPTION.search(stripped)):
        return
    found = next(group for group in options.groups() if group)
    labels = (
        _quoted(found) if options.group("quoted") else _listed_values(re.sub(r"(?i)^yes\s+or\s+no$", "yes, no", found))
    )
    if len(labels) >= 2:
        yield library.label_draft(labels, bare=bare)


#: '"reasons" (a list of 1 to 3 labels from the allowed list)': a key whose values come from a set the prompt lists.
_FROM_THE_LIST: Final = re.compile(
    r"[\"“'`](?P<key>[A-Za-z_][\w-]{0,30})[\"”'`]\s*(?:\(|:|-|—)\s*(?:an?\s+)?(?:list|array)\s+of\s+(?:[\w-]+\s+){0,4}?"
    r"(?:labels|values|categories|tags|codes)\s+from\s+the\s+(?:allowed|listed|given|above)\b",
    re.IGNORECASE,
)


_SCHEMA_ONE_OF: Final = re.compile(
    rf"^(?P<key>[A-Za-z_][\w-]{{0,30}})\s*:\s*(?:{_SCHEMA_TYPES}\s*,?\s*)?(?:one\s+of|either)\s*:?\s*(?P<values>.+)$",
    re.IGNORECASE,
)


#: Quoted values joined as alternatives: '"high", "medium" or "low"', '"whole bean" | "espresso"'.
_QUOTED_ALTERNATIVES: Final = r"[\"“][^\"”\n]{1,30}[\"”](?:\s*(?:,\s*or|,|or|/|\|)\s*[\"“][^\"”\n]{1,30}[\"”])+"
#: A schema line whose key's values are quoted right after it: '"confidence": "high", "medium" or "low"; ...'.
_SCHEMA_QUOTED_VALUES: Final = re.compile(
    r"^(?:[-*•]\s+)?[\"“'`]?(?P<key>[A-Za-z_][\w-]{0,30})[\"”'`]?\s*:\s*"
    rf"(?P<values>{_QUOTED_ALTERNATIVES})"
)


#: The values a JSON key takes, said of the key by the noun that names it: "Panel names must be one of:
#: front_bumper, rear_bumper, ...", "4. Damage types: scratch, scuff, dent, ...", "category - exactly one of:
#: production_drop, ..." where the schema has the keys "panel", "type" and "category" (in the objects of a list,
#: or the object itself).
_KEY_VALUES_LISTED: Final = re.compile(
    r"^(?:\d+[.)]\s*|[-*•]\s+)?(?P<subject>[A-Za-z][\w-]*(?:\s+[A-Za-z][\w-]*)?)\s*(?:(?:[-–—:]\s*|(?:must|should|has\s+to"
    r"|needs\s+to)\s+be\s+)(?:exactly\s+|only\s+)?one\s+of\s*:?|:)\s*(?P<values>[^.\n]+?)(?:\.\s|\.?$)",
    re.IGNORECASE,
)
#: A value a schema lists bare: an identifier ("front_bumper", "missing_item", "low"), never prose.
_BARE_VALUE: Final = re.compile(r"[a-z0-9][a-z0-9_]*(?:-[a-z0-9_]+)*")


def _nested_value_set(text: str, prompt: str) -> Iterator[_Draft]:
    """:data:`_KEY_VALUES_LISTED`: every value of that key, at any depth, is one of the values (quoted, or three
    or more bare identifiers)."""
    keys = {key.lower(): key for key in _template_keys(prompt)}
    for line in text.splitlines():  # "category - exactly one of: ...\nurgency - exactly one of: ...": each line
        found = _KEY_VALUES_LISTED.match(line.strip())
        if found is None:
            continue
        words = found.group("subject").lower().split()
        named = ["_".join(words), *reversed(words)]
        key = next((keys[word] for name in named for word in (name, name.removesuffix("s")) if word in keys), None)
        values = _quoted(found.group("values"))
        if not values:
            values = _listed_values(found.group("values"))
            if len(values) < 3 or not all(_BARE_VALUE.fullmatch(value) for value in values):
                continue
        if key is not None and len(values) >= 2:
            yield library.nested_value_set_draft(key, values)


#: A key of a template's inner object with its quoted values: '"grind": "whole bean" | "espresso" | "filter"'.
_INNER_QUOTED_VALUES: Final = re.compile(
    r"[\"“](?P<key>[A-Za-z_][\w-]{0,30})[\"”]\s*:\s*"
    rf"(?P<values>{_QUOTED_ALTERNATIVES})(?!\s*:)"  # not the next key: '"sku": "...", "quantity": ...'
)


#: A JSON key's values listed in the items below the sentence: 'use exactly one of these strings for "category"',
#: 'Pick one of the following labels as "priority":'.
_ONE_OF_THESE_FOR: Final = re.compile(
    r"\b(?:use|choose|pick|select|give)\s+(?:exactly\s+|only\s+)?one\s+of\s+(?:these|the\s+following)\s+"
    r"(?:[\w-]+\s+){0,2}?(?:for|as|in)\s+(?:the\s+)?[\"“'`](?P<key>[A-Za-z_][\w-]{0,30})[\"”'`]",
    re.IGNORECASE,
)
#: An item that is one value, then what it means: "- unrecognised_charge: a charge the customer doesn't recognise".
_VALUE_ITEM: Final = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+[`\"“']?([A-Za-z0-9_][\w-]{0,40})[`\"”']?\s*(?::|—|–|-\s|$)")


def _value_set(text: str, prompt: str, lines: str = "") -> Iterator[_Draft]:
    """``Priority must be one of "low", "medium" or "high"`` in a prompt that asks for a JSON object with the key
    "priority": that key's value is one of them (a key of objects in an array is left to a model, unless the noun
    before the set names a key of the prompt's template: :func:`_nested_value_set`, read on each of the
    instruction's ``lines``). A key holding "a list of labels from the allowed list" holds only the labels the
    prompt's "Allowed labels:" line lists."""
    listed, allowed = _FROM_THE_LIST.search(text), _ALLOWED.search(prompt)
    if listed is not None and allowed is not None and len(values := _listed_values(allowed.group(1))) >= 2:
        yield library.value_set_draft(listed.group("key"), values)
    schema = _SCHEMA_ONE_OF.match(text) or _SCHEMA_QUOTED_VALUES.match(text)
    json_asked = re.search(r"\bjson\b", prompt, re.IGNORECASE) is not None
    if schema is not None and json_asked and len(values := _quoted(schema.group("values"))) >= 2:
        yield library.value_set_draft(schema.group("key"), values)  # "queue: string, one of "a", "b""
    if json_asked:  # '"minutes" (a number no greater than 45)', '"clarity": integer 1-5'
        for bounded in _NUMBER_BOUND.finditer(text):
            low, high = _number_bounds(bounded)
            yield library.number_range_draft(bounded.group("key") or bounded.group("bare"), low, high)
        typed = library.NUMBER_KEY.search(text)
        # '"amount" must be a number, not a string': a number of any size (a range is the cued check's)
        if typed is not None and re.match(
            r"\s*(?:an?\s+)?(?:number|integer|numeric\s+value)\b(?![^.]*\b(?:between|from)\s+-?\d)",
            text[typed.end() :],
            re.I,
        ):
            yield library.number_range_draft(typed.group("key") or typed.group("set"), None, None)
    keyed = _ONE_OF_THESE_FOR.search(text) if json_asked else None
    if keyed is not None:  # 'CATEGORIES (use exactly one of these strings for "category")' over "- price_rise: ..."
        items = [_VALUE_ITEM.match(item) for item in _items_after(prompt, lines or text)]
        if len(items) >= 2 and all(items):
            yield library.value_set_draft(keyed.group("key"), [item.group(1) for item in items if item])
    yielded = False
    # '"lines": [{{"sku": "...", "grind": "whole bean" | "espresso" | "filter"}}]': a key inside the line's objects
    for line in (lines or text).splitlines() if json_asked else ():
        for inner in _INNER_QUOTED_VALUES.finditer(line):
            before = line[: inner.start()]
            values = [value for value in _quoted(inner.group("values")) if value.strip(".… ")]  # not "..."
            if before.count("{") > before.count("}") and len(values) >= 2:  # inside an object the line opens
                yielded = True
                yield library.nested_value_set_draft(inner.group("key"), values)
    if json_asked and schema is None and listed is None:
        for draft in _nested_value_set(lines or text, prompt):
            yielded = True
            yield draft
    match = _ONE_OF.search(text)
    if yielded or match is None or re.search(r"\bjson\s+(?:array|list)\b", prompt, re.IGNORECASE):
        return
    if not re.search(r"\bjson\b", prompt, re.IGNORECASE) or not re.search(r"\bobject\b", prompt, re.IGNORECASE):
        return
    quoted = re.search(rf"[\"“'`]({re.escape(match.group('key'))})[\"”'`]", prompt, re.IGNORECASE)
    values = _quoted(match.group("values"))
    if quoted is not None and len(values) >= 2:  # a key the prompt names, and a set to choose from
        yield library.value_set_draft(quoted.group(1), values)


#: A JSON key given as a number within bounds: '"minutes" (a number no greater than 45)', '"clarity": integer 1-5',
#: '- confidence: a number between 0 and 1'. Not a size ("max 20 words", "1 to 3 items"): a unit after the bound
#: makes it a count.
_NUMBER_BOUND: Final = re.compile(
    r"(?:[\"“'`](?P<key>[A-Za-z_][\w-]{0,30})[\"”'`]|^\s*[-*•]?\s*(?P<bare>[a-z_][\w-]{0,30}))\s*(?::|\(|-|—)\s*"
    r"(?:(?:an?|one)\s+)?(?:whole\s+|positive\s+)?(?:number|integer|int|float|decimal|scores?|integers)\s*,?\s*"
    r"(?:(?:from|between)\s+(?P<low>-?\d+(?:\.\d+)?)\s+(?:to|and)\s+(?P<high>-?\d+(?:\.\d+)?)"
    r"|(?P<low2>-?\d+(?:\.\d+)?)\s*(?:-|–|to)\s*(?P<high2>-?\d+(?:\.\d+)?)"
    r"|(?:no\s+greater\s+than|no\s+more\s+than|not\s+more\s+than|at\s+most|up\s+to|max(?:imum)?|<=|≤)\s*"
    r"(?P<high3>-?\d+(?:\.\d+)?)"
    r"|(?:no\s+less\s+than|at\s+least|min(?:imum)?|>=|≥)\s*(?P<low3>-?\d+(?:\.\d+)?))"
    r"(?!\s*(?:-|–|to)\s*\d)(?![\d.]*\s*(?:words?|characters?|chars|sentences?|items?|bullets?|lines?|paragraphs?|"
    r"entries|elements|tags|keywords|%))",
    re.IGNORECASE | re.MULTILINE,
)


def _number_bounds(bounded: re.Match[str]) -> tuple[float | None, float | None]:
    def number(*names: str) -> float | None:
        found = next((bounded.group(name) for name in names if bounded.group(name)), None)
        return float(found) if found is not None else None

    return number("low", "low2", "low3"), number("high", "high2", "high3")


#: '"quote" (a phrase copied word for word from the survey answer ...)': a JSON key whose value the input holds.
_COPIED: Final = re.compile(
    r"[\"“'`](?P<key>[A-Za-z_][\w-]{0,30})[\"”'`]\s*(?:\(|:|-|—)\s*(?:an?\s+|the\s+)?(?:[\w-]+\s+){0,3}?"
    r"(?:copied|quoted|taken|extracted)\s+(?:word[\s-]for[\s-]word|verbatim|exactly|as\s+written)\s+from\s+"
    r"(?:the\s+|your\s+)?(?P<source>[A-Za-z][\w ]{0,40}?)(?=\s+(?:that|which|who|to)\b|\s*[),.;]|$)",
    re.IGNORECASE,
)


#: "One sentence from the statement of the director must be quoted word by word", "quote the customer's message
#: verbatim": a quotation copied from an input; the source follows "from" ("from the statement", "of the review").
_QUOTED_FROM: Final = re.compile(
    r"\b(?:from|of)\s+(?:the\s+|your\s+)?(?P<source>[a-z][\w'’ ]{2,40}?)\s+(?:must|should|has\s+to|is|are)\s+"
    r"(?:be\s+)?quoted\b[^.]{0,30}?\b(?:word[\s-](?:by|for)[\s-]word|verbatim|exactly)"
    r"|\bquot(?:e|ing)\s+(?:\w+\s+){0,4}?(?:from|of)\s+(?:the\s+|your\s+)?(?P<object>[a-z][\w'’ ]{2,40}?)\s+"
    r"(?:word[\s-](?:by|for)[\s-]word|verbatim|exactly)",
    re.IGNORECASE,
)


#: "Put the compensation statement in its own paragraph, word for word as given above": an input copied whole.
_INPUT_VERBATIM: Final = re.compile(
    r"\b(?:put|include|copy|quote|use|give|state|repeat|insert|paste)\s+(?:the\s+|your\s+)?"
    r"(?P<phrase>[a-z][\w'’ -]{1,40}?)(?:\s+(?:in|on|at|into)\s+[^.]{1,40}?)?,?\s+(?:word[\s-]for[\s-]word|verbatim"
    r"|unchanged|exactly\s+as\s+(?:given|written|provided|stated))",
    re.IGNORECASE,
)
#: "The boilerplate is pasted unchanged", "the disclaimer must be included word for word": the same, passive.
_INPUT_PASTED: Final = re.compile(
    r"^(?:the\s+|your\s+)?(?P<phrase>[a-z][\w'’ -]{1,40}?)\s+(?:is|are|must\s+be|should\s+be|gets?)\s+"
    r"(?:pasted|copied|included|kept|reproduced|inserted|used|given|quoted)\s+(?:in\s+full\s+|as\s+a\s+whole\s+)?"
    r"(?:word[\s-]for[\s-]word|verbatim|unchanged|as\s+is|exactly\s+as\s+(?:given|written|provided))",
    re.IGNORECASE,
)
#: Nouns that name the form an input comes in rather than the input: "the compensation statement" of {compensation}.
_FORM_NOUNS: Final = r"\s+(?:statement|text|line|sentence|wording|details|information|note|message)$"


def _copied_whole(text: str, vocabulary: _Vocabulary) -> Iterator[_Draft]:
    """An input whose whole value the sentence asks to copy word for word, named by the prompt's words for it
    ("the compensation statement" of "Compensation: {compensation}")."""
    copied = _INPUT_VERBATIM.search(text) or _INPUT_PASTED.match(_clean(text))
    if copied is not None:
        phrase = copied.group("phrase").strip()
        field = vocabulary.input_named(phrase) or vocabulary.input_named(re.sub(_FORM_NOUNS, "", phrase))
        if field is not None:
            yield library.copied_input_draft(field)


def _quoted_from(text: str, vocabulary: _Vocabulary) -> Iterator[_Draft]:
    """A quotation the sentence asks to copy word for word from an input it names by the prompt's words for it
    ("the statement of the director" of "Here is the statement of the director: {director_statement}")."""
    match = _QUOTED_FROM.search(text)
    if match is None:
        return
    source = (match.group("source") or match.group("object")).strip()
    field = vocabulary.field_of(source) or vocabulary.input_named(source)
    if field is not None:
        yield library.quotes_draft(field)


#: "date: YYYY-MM-DD, must be one of the match dates - drop any other date", "role: exactly one of the roles, else
#: null": a JSON key whose values the prompt draws from an input's list.
_FROM_AN_INPUT: Final = re.compile(
    r"^(?P<key>[a-z][a-z0-9_]{0,30})\s*:\s*[^\n]{0,80}?\b(?:must\s+be\s+|is\s+|exactly\s+|only\s+)+one\s+of\s+"
    r"(?:the\s+|your\s+)?(?P<noun>[a-z][\w ]{1,30}?)(?=\s*(?:[-–—,.;:()]|$)|\s+(?:else|or|otherwise|and|drop|listed"
    r"|given|above|below)\b)",
    re.IGNORECASE,
)
#: "QUOTE: <words copied exactly from title or description that triggered the decision, or NONE>": a labelled
#: line the response fills with words its inputs hold, or with the word the prompt gives for none.
_COPIED_LABEL: Final = re.compile(
    r"^(?P<label>[A-Za-z][\w /&'-]{0,30}?)\s*:\s*[<\[][^>\]]{0,40}?\b(?:copied|quoted|taken)\s+"
    r"(?:word[\s-]for[\s-]word|verbatim|exactly)\s+from\b[^>\]]*?(?:,?\s+or\s+[\"“']?(?P<none>[A-Z][A-Za-z/ ]{0,15}?)"
    r"[\"”']?)?\s*[>\]]",
)


def _drawn_from_input(text: str, prompt: str, vocabulary: _Vocabulary) -> Iterator[_Draft]:
    """A JSON key whose every value must be one an input lists, the input named by the prompt's words for it (a
    unit may hold several key lines of a schema)."""
    if not re.search(r"\bjson\b", prompt, re.IGNORECASE):
        return
    for line in text.splitlines():
        match = _FROM_AN_INPUT.match(_clean(line))
        field = None if match is None else vocabulary.input_named(match.group("noun").strip())
        if match is None or field is None:
            continue
        key = match.group("key")
        yield _Draft(
            f"{key}_is_one_of_the_{field}",
            DATA_PLACEHOLDERS,
            f"Every “{key}” it gives is one the input `{field}` names (or null).",
            f"checks.json_values_from(response, {library.literal(key)}, "
            f"checks.value(example, {library.literal(field)}))",
            {"family": "json_values_from", "key": key, "field": field},
        )


def _copied_label(text: str, vocabulary: _Vocabulary) -> Iterator[_Draft]:
    """A labelled line whose value is words copied from the inputs, or the prompt's word for none ("NONE")."""
    match = next(filter(None, (_COPIED_LABEL.match(_clean(line)) for line in text.splitlines())), None)
    if match is None or not vocabulary.inputs:
        return
    label, none = match.group("label").strip(), (match.group("none") or "").strip()
    expression = f"checks.verbatim(checks.section(response, {library.literal(label)}), checks.inputs_text(example))"
    if none:
        expression = (
            f"checks.section(response, {library.literal(label)}).strip(' .').lower() == {library.literal(none.lower())}"
            f" or {expression}"
        )
    yield _Draft(
        f"{label}_copied_from_the_inputs",
        DATA_PLACEHOLDERS,
        f"Its “{label}:” line holds words copied exactly from its inputs" + (f", or “{none}”." if none else "."),
        expression,
        {"family": "copied_label", "label": label, "none": none},
    )


def _copied(text: str, prompt: str, vocabulary: _Vocabulary) -> Iterator[_Draft]:
    """A key of the JSON the prompt asks for, copied word for word from an input the sentence names by the
    prompt's words for it ("the survey answer" of "Survey answer: {answer}") or by its placeholder."""
    if not re.search(r"\bjson\b", prompt, re.IGNORECASE):
        return
    for match in _COPIED.finditer(text):
        source = match.group("source").strip()
        field = vocabulary.field_of(source) or vocabulary.input_named(source)
        if field is not None:
            yield library.verbatim_draft(match.group("key"), field)


def _structure_label(text: str) -> Iterator[_Draft]:
    """``**Central Thesis:**`` in a prompt names a section the response should have."""
    match = _STRUCTURE_LABEL.match(text)
    if match and not re.search(r"\b(?:should|must|please|you)\b", match.group(1), re.IGNORECASE):
        first = match.group(1).split()[0].lower()
        if first not in _IMPERATIVES:  # "**Begin with Context:**" instructs; it names no section
            yield _heading_draft(match.group(1), PRESENTATION_FORMAT)


def _quoted(text: str) -> list[str]:
    phrases = []
    for match in _QUOTED.finditer(text):
        phrase = next(group for group in match.groups() if group is not None).strip()
        if phrase and not re.fullmatch(r"\{\{?\s*\w+\s*\}?\}", phrase):
            phrases.append(phrase)
    return list(dict.fromkeys(phrases))


def _literal_quotes(text: str, frame: re.Pattern[str] = _LITERAL_FRAME, *, unconditional: bool = False) -> list[str]:
    """Quoted phrases that are literal terms: governed by a word frame or a verb (``frame``), or listed after
    one. With ``unconditional``, not one asked for under a condition its sentence states ("If the diff changes no
    tests, write "No tests added."", 'Use "mixed" when the review ...'), nor a pattern ending in an ellipsis ("Fix
    ..."), nor a mark with no word in it ('using "- " as the bullet marker')."""
    phrases: list[str] = []
    previous_end: int | None = None
    for match in _QUOTED.finditer(text):
        phrase = next(group for group in match.groups() if group is not None).strip()
        # a one-word label in capitals is asked for as a whole answer ('Reply "YES" or "NO"'), never a term to
        # include; a phrase in capitals is ('write "UPDATES TO FOLLOW"'), and so is a ban's ("never write "LGTM"")
        if (
            not phrase
            or re.fullmatch(r"\{\{?\s*\w+\s*\}?\}", phrase)
            or (unconditional and phrase.isupper() and " " not in phrase.strip())
        ):
            continue
        if unconditional and (
            phrase.endswith(("...", "…"))
            or _CONDITION.search(re.split(r"[.!?]\s", text[: match.start()])[-1])
            or re.match(r"\s+(?:only\s+)?(?:when|if|whenever|unless|in case)\b", text[match.end() :], re.I)
            or not any(ch.isalnum() for ch in phrase)  # 'using "- " as the bullet marker': a mark, not a term
        ):
            previous_end = None
            continue
        before = text[: match.start()]
        listed = previous_end is not None and re.fullmatch(
            r"\s*(?:,|/|or|and)?\s*(?:or|and)?\s*", before[previous_end:]
        )
        if listed or frame.search(before[-60:]):
            phrases.append(phrase)
            previous_end = match.end()
        else:
            previous_end = None
    return list(dict.fromkeys(phrases))


def _before_a_condition(sentence: str) -> str | None:
    """The sentences of an item before its first conditional one, when a later sentence states a condition and
    they do not ("Never offer a refund, credit or discount. If they ask for money back, tell them ..."); None for
    an item of one sentence, or one that opens with its condition."""
    text = _clean(sentence)
    if not _CONDITIONAL.search(text) or _ITEM_LABEL.match(text):
        return None  # an item that opens with a label ("For [RECALL]:", "due_date:") is that label's rule alone
    sentences = [part.text for part in split_sentences(text)]
    first = next((i for i, part in enumerate(sentences) if _CONDITIONAL.search(part)), 0)
    if first and _ABSENT.search(sentences[first]):
        return None  # "List the documents as bullets. If there are none, say so": the list is owed only when some are
    return " ".join(sentences[:first]) or None


#: A label an item opens with, a case's in brackets too ("due_date:", "For [RECALL]:"; :data:`_LABEL_OPENING` reads
#: only the first).
_ITEM_LABEL: Final = re.compile(r"(?:for\s+)?[\[\"“'`]?[\w /&'-]{1,30}[\]\"”'`]?\s*:\s", re.IGNORECASE)
#: A condition on something being absent, which excuses what the sentence before it asks: "If there are none",
#: "If they give no name", "Use "" if there is nothing to add", "Null if not given".
_ABSENT: Final = re.compile(
    r"\b(?:if|when|unless)\b[^.!?]{0,40}?\b(?:none|nothing|no\s+\w+|empty|missing|unknown|not\s+(?:given|stated|"
    r"provided|known|available|listed|mentioned))\b",
    re.IGNORECASE,
)


def _conditional_at(text: str, index: int) -> bool:
    """Whether the sentence of ``text`` that holds ``index`` opens with a condition ("If you find nothing, ...")."""
    return (
        re.match(r"\s*(?:if|when|whenever|unless|in case)\b", re.split(r"[.!?]\s", text[:index])[-1], re.I) is not None
    )


def _negation(text: str) -> re.Match[str] | None:
    """The first exclusion cue that instructs: not inside a condition ("... if the text does not provide X"
    states a condition, it bans nothing). A cue in a relative or complement clause instructs ("make sure that
    you do not mention X", "a reply which does not mention X")."""
    for cue in _EXCLUDE_CUE.finditer(text):
        breaks = [match.end() for match in _CLAUSE_BREAK.finditer(text, 0, cue.start())]
        prefix = text[max(breaks, default=0) : cue.start()]
        if not _CONDITION.search(prefix):
            return cue
    return None


#: What follows an ending's quoted words when more lines come after them: "... 'With warm thanks,' then the name".
_MORE_LINES_AFTER: Final = re.compile(r"[\"”'’`]?\s*[,;]?\s*(?:and\s+)?(?:then|followed\s+by)\b", re.IGNORECASE)
#: Cued families that ask for words every response holds: under a condition only some responses owe them.
_OWED_BY_SOME: Final = frozenset({"invites_contact", "call_to_action"})
#: A sentence that opens with its condition, after a topic's label if it has one: "If the review mentions ...".
_LEADING_CONDITION: Final = re.compile(r"\s*(?:[\w -]{1,30}:\s*)?(?:if|when|whenever|unless|in case)\b", re.IGNORECASE)
#: A colon or dash after which the sentence asks for something new ("... can't be confirmed: say we've noted it"),
#: or a comma before the next instruction of a list of them.
_NEXT_INSTRUCTION: Final = re.compile(
    r"\s*[:—–-]\s+(?=(?:instead\s+|just\s+|simply\s+)?(?:say|tell|write|reply|explain|offer|ask|suggest|let|point|"
    r"direct|refer|apologi[sz]e|thank|acknowledge|confirm)\b)"
    # "no subject line, start with "Hi {candidate_first_name},"": the next instruction of a list of them
    r"|\s*,\s+(?:and\s+)?(?=(?:start|begin|open|end|finish|close|sign|address|keep)\b)",
    re.IGNORECASE,
)


#: Quoted phrases offered as alternatives: '"linked to" or "associated with"'.
_ALTERNATIVE_QUOTES: Final = re.compile(r"[\"”'’]\s*,?\s+or\s+[\"“'‘]")


#: Words for a JSON output's own structure, which a rule about that structure names and no response writes as
#: words: "Don't include keys with null values".
_SCHEMA_WORDS: Final = frozenset(
    {"key", "keys", "field", "fields", "value", "values", "json", "null", "nulls", "property", "properties", "object"}
)


def _phrases(text: str, vocabulary: _Vocabulary, *, exclude: bool) -> Iterator[_Draft]:
    """Literal terms the sentence asks to include or to leave out: quoted phrases a verb or a word frame governs,
    and named things (whole phrases, never their single words) that are concrete rather than a quality."""
    cue = _negation(text) if exclude else None
    if exclude and cue is None:
        return
    if not exclude and not _INCLUDE_CUE.search(text):
        return
    # only what follows the negation, up to a semicolon ("do not repeat doses; write "as prescribed" instead")
    scope = text[cue.start() :].split(";")[0] if cue is not None else text
    if (
        cue is not None
    ):  # "... can't be confirmed in advance: say we've noted it": what follows is asked for, not banned
        scope = _NEXT_INSTRUCTION.split(scope, maxsplit=1)[0]
    if cue is not None and (sentences := split_sentences(scope)):  # its own sentence: 'Never name a commenter. Use
        scope = sentences[0].text  # "a resident".' bans no "a resident"
    if cue is not None and _NO_QUOTING.search(scope) and not _QUOTING_ALLOWED.search(scope):
        scope = _QUOTING_CLAUSE.sub(" ", scope)  # whom not to quote is no phrase to ban
    quoted = _literal_quotes(scope, unconditional=not exclude)
    if not exclude:  # 'say "stitches", not "sutures"': "stitches" where the other would come up, not in every answer
        preferred = _reworded(scope)[0]
        quoted = [phrase for phrase in quoted if phrase not in preferred]
    examples = _literal_quotes(scope, _EXAMPLE_FRAME)
    if exclude:
        # 'Don't guess, not even a "usually"': a word the ban reaches even to
        quoted += [phrase for phrase in _literal_quotes(scope, _NOT_EVEN) if phrase not in quoted]
        # '(write "dichloromethane", not "DCM")': the form to write, set against the banned ones
        quoted = [q for q in quoted if not re.search(rf"[\"“'‘`]{re.escape(q)}[\"”'’`]\s*,?\s+not\s+[\"“'‘`]", scope)]
    if exclude and not quoted:  # "avoid superlatives such as "best" or "perfect"": the examples are banned too, and
        # so are those a bracket gives: 'No praise or summary comments ("Nice work!", "LGTM")'
        quoted = examples or _literal_quotes(scope, _OPENING_BRACKET)
    elif not exclude:  # "use a friendly sign-off like "Cheers"": one of many that comply, not a requirement
        quoted = [phrase for phrase in quoted if phrase not in examples]
    if re.search(r"\b(?:start|begin|end|finish)s?\s+(?:\w+\s+){0,2}?with\b", text, re.IGNORECASE):
        quoted = []  # handled as starts/ends-with
    lowered_quotes = {q.lower() for q in quoted}
    # "no quote marks": the marks, read below, not "marks" as a word
    unpunctuated = re.sub(
        r"\b(?:quot(?:e|ation)|question|exclamation)\s+marks?\b", " , ", _QUOTED.sub(" , ", scope), flags=re.I
    )
    named = [
        phrase
        for phrase in _named_phrases(unpunctuated, banned=exclude)
        if phrase not in lowered_quotes
        and not re.search(r"\s(?:or|and|nor)$", phrase)  # a list's stub: "accepted or"
        and phrase.lower() not in _SCHEMA_WORDS  # "Don't include keys with null values": no word "keys" to ban
    ]
    referred = {phrase: field for phrase in named if (field := vocabulary.input_named(phrase))}
    if not exclude:  # "mention the route number, the date and the alternative stop": inputs named by their words
        referred |= _inputs_named_as_objects(scope, vocabulary)
    sourced = library.SOURCED_CUE.search(scope) is not None
    if sourced:  # "never add medicines that are not in the note": what the source lacks, not these words;
        named = list(referred)  # "give the closure dates exactly as provided": the source's figures
    instances = _instances(scope) if exclude and not quoted and not sourced else []
    if instances:  # "avoid competitors such as Acme or Globex": the names are what must not appear (but "don't
        named = instances  # invent things not in my notes (for example lunch, prices)" bans inventing them)
    verdict = _NO_VERDICT.search(scope) if exclude and not quoted else None
    if verdict is not None:  # "never say whether a permit will be approved or refused": the outcomes' words
        named = [word for word in verdict.group("a", "b") if word and word.lower() not in ("not", "no")]
    listed = _BANNED_LIST.search(scope) if exclude and not quoted and not sourced and not verdict else None
    if listed is not None:  # "No hype words: revolutionary, game-changing, cutting-edge": the words themselves
        named = [word for word in re.split(r",\s*(?:or\s+|and\s+)?|\s+or\s+|\s+and\s+", listed.group(1)) if word]
    # not "don't comment on trailing commas": a ban on remarks about the marks, which may well be in the text
    remarks = _REMARKS_ON.search(scope) is not None
    marks = [
        mark
        for name, forms in _PUNCTUATION.items()
        if exclude and not remarks and re.search(name, scope, re.I)
        for mark in forms
    ]
    if "," in marks and _ABOUT_NUMBERS.search(text):  # "Amounts are plain numbers: no commas": no 1,549,800
        marks.remove(",")
        yield library.ungrouped_numbers_draft()
    # "never use SELECT *", not the form to write instead: "no umlauts (write AE, OE, UE)"
    unglossed = _INSTEAD.sub(" ", scope)
    marks += [term.strip() for term in _CODE_TERM.findall(unglossed)] if exclude else []
    marks += [  # "Never use @everyone or @here"
        token for listed in _MENTION_TOKEN.findall(unglossed) if exclude for token in re.findall(r"[@#][\w-]+", listed)
    ]
    if not exclude and referred:  # "include the target keyword" of "the target keyword [keyword]": its value
        named = [phrase for phrase in named if phrase not in referred]
        for field in dict.fromkeys(referred.values()):
            yield mentions_draft(field)
    # not the input the sentence's colon hands over: "(... don't mention it ...): {property_facts}"
    banned_inputs = [
        field
        for field in (vocabulary.fields_in(scope) if exclude else ())
        if not re.search(rf":\s*\{{\{{?\s*{re.escape(field)}\s*\}}?\}}\s*$", scope)
    ]
    for match in _object_matches(scope) if exclude else []:  # "never reveal the solution" of {solution}: its value
        obj = re.sub(r"\s+(?:itself|themselves)\b.*$|\s*[(,;].*$", "", match.group("object").strip())
        field = vocabulary.input_named(obj)
        if field is not None and field not in banned_inputs:
            banned_inputs.append(field)
            named = [phrase for phrase in named if phrase.lower() not in obj.lower()]
    # a word the sentence asks for without quoting it ("mention safety precautions", "include sets, reps and rest")
    # names content, which a response words its own way: across two hundred other authors' prompts such checks
    # failed most good outputs 17 times in 19 and caught a bad one never; a quoted phrase is the words themselves
    # "Jira keys (like PLAT-123)": any key, not that one; "don't @mention anyone": no handle, not "anyone"; but
    # "don't invent ticket numbers like PLAT-123" bans coining them, which the grounding checks read
    coined = sourced or library.SOURCED_CODES_CUE.search(scope) is not None
    forms, kinds = _banned_forms(scope) if exclude else ([], [])
    if forms:  # the examples and their kind ("Jira keys", "PR" of "PR numbers") are no words to ban
        quoted = [phrase for phrase in quoted if phrase not in forms]
        named = [
            phrase
            for phrase in named
            if phrase not in forms
            and not _HANDLE_BAN.search(scope)
            and not any(_overlap(kind, phrase) for kind in kinds)
        ]
        marks = [mark for mark in marks if mark not in forms and not any(_overlap(kind, mark) for kind in kinds)]
        if not coined:
            yield library.form_ban_draft(forms)
    phrases = quoted + (named if exclude else []) + list(dict.fromkeys(marks))
    if exclude:  # '... anywhere in the output, including "notes"' of a template with a "notes" key: where, not what
        keys = {key.lower() for key in _layout_keys(vocabulary.prompt)}
        phrases = [phrase for phrase in phrases if phrase.lower() not in keys]
    if phrases and exclude and _OUTSIDE_QUOTES.search(scope):  # 'No "we" outside of quotes': quotations may
        draft = phrases_draft(phrases, exclude=True)
        yield dataclasses.replace(
            draft,
            description=f"{draft.description[:-1]} outside quotations.",
            expression=draft.expression.replace("(response,", "(checks.unquoted(response),"),
            check={**(draft.check or {}), "outside_quotations": True},
        )
    elif phrases:  # 'Say "linked to" or "associated with"': either will do
        alternatives = not exclude and len(quoted) > 1 and _ALTERNATIVE_QUOTES.search(scope) is not None
        yield phrases_draft(phrases, exclude=exclude, any_of=alternatives)
    part = _PART_OF_IT.search(scope)
    letters = int(part.group("letters") or 4) if part is not None else 4
    for field in banned_inputs:
        yield mentions_draft(field, exclude=True)
        if part is not None:  # "..., any part of it that is 4 or more letters long, or a word from the same root"
            yield library.gives_away_draft(field, letters)
    if part is not None and not banned_inputs:  # "Never include the answer word, or any word sharing its root, in
        # the clue" of a JSON whose objects hold an answer and a clue: each clue keeps its own answer back
        inside = re.search(r"\b(?:in|into|inside|within)\s+(?:the|a|its|each|any)\s+(\w+)", scope, re.IGNORECASE)
        container = _json_key_named(vocabulary.prompt, inside.group(1).lower()) if inside else None
        secrets = [
            key
            for word in re.findall(r"\bthe\s+(\w+)", scope[: inside.start()] if inside else "", re.IGNORECASE)
            if (key := _json_key_named(vocabulary.prompt, word.lower())) not in (None, container)
        ]
        if container is not None and secrets:
            yield library.gives_away_within_draft(container, secrets[0], letters)
    if exclude:
        yield from _offer_bans(scope)


#: A ban on offering or promising things: "Never promise refunds, bill credits or compensation", "Do not offer
#: refunds, vouchers, upgrades or free nights". The object runs to the clause's end, a preposition that starts a
#: modifier ("in the public reply", "to the customer") or a second instruction ("..., and do not give a reason").
_OFFER_BAN: Final = re.compile(
    r"\b(?:promis(?:e|es|ing)|offer(?:s|ing)?|guarantee(?:s|ing)?|commit(?:s|ting)?\s+to)\s+"
    r"(?P<object>(?:(?!\b(?:if|when|unless|until|in|to|for|from|on|at|beyond|that|which|who|even|because|before|after|"
    r"outside|without|by|with|than|instead|and\s+(?:do|don't|never|not|say|tell|give|ask|explain)|"
    r"or\s+(?:do|don't|never|not|say|tell|give|ask|explain|suggest|guarantee|promise))\b)[^.;:()\n\"“”])+)",
    re.IGNORECASE,
)


def _offer_bans(scope: str) -> Iterator[_Draft]:
    """Things a ban says not to offer or promise, as terms no clause may offer (``checks.offers``): a reply that
    names one to say it cannot be had complies. A set time has its own reading (:data:`_NO_SET_TIME`)."""
    found = _OFFER_BAN.search(scope)
    if found is None or _NO_SET_TIME.search(scope):
        return
    terms = []
    for part in re.split(r",\s*(?:and\s+|or\s+)?|\s+or\s+|\s+and\s+", found.group("object")):
        part = re.sub(r"^\s*(?:(?:a|an|any|some)\s+)?(?:(?:other|extra|further|additional)\s+)?", "", part.lower())
        if re.match(r"(?:not|no|nor|never)\b", part):
            continue  # "never promise a date, not even "probably Tuesday"": what the ban reaches to, read as a quote
        term = _literal_phrase(part, framed=False)
        if term is not None:
            terms.append(term)
    if terms:
        yield library.offers_none_draft(list(dict.fromkeys(terms)))


#: A wording preferred to another: 'say "stitches", not "sutures"', '"tummy" instead of "abdomen"', '"use", rather
#: than "utilise" or "leverage"'.
_PREFERRED_QUOTE: Final = re.compile(
    r"[\"“](?P<preferred>[^\"”\n]{1,40})[\"”]\s*,?\s+(?:not|instead\s+of|rather\s+than|over)\s+"
    r"(?P<replaced>[\"“][^\"”\n]{1,40}[\"”](?:\s*(?:,|or|,\s*or)\s*[\"“][^\"”\n]{1,40}[\"”])*)",
    re.IGNORECASE,
)
#: A sentence that swaps terms for others, which its mapping lists: "Replace US-only ingredient names with UK
#: equivalents (all-purpose flour → plain flour, powdered sugar → icing sugar)".
_SWAP_VERB: Final = re.compile(r"\b(?:replace|swap|substitute|convert|rename|translate|instead)\w*\b", re.IGNORECASE)
_SWAPPED: Final = re.compile(
    r"(?P<old>[A-Za-z][\w' -]{1,40}?)\s*(?:→|->|=>)\s*(?P<new>[A-Za-z][\w' -]{1,40}?)\s*(?=[,;)]|$)"
)


def _reworded(text: str) -> tuple[list[str], list[str]]:
    """The wordings a sentence prefers and the ones they replace: 'say "stitches", not "sutures"' prefers
    "stitches" to "sutures", and a mapping under a verb of swapping ("Replace US ingredient names (heavy cream →
    double cream)") "double cream" to "heavy cream". The preferred one is what to write when the other would come
    up, never a word every response owes."""
    preferred: list[str] = []
    replaced: list[str] = []
    for pair in _PREFERRED_QUOTE.finditer(text):
        preferred.append(pair.group("preferred"))
        replaced += re.findall(r"[\"“]([^\"”\n]{1,40})[\"”]", pair.group("replaced"))
    if _SWAP_VERB.search(text):
        for pair in _SWAPPED.finditer(text):
            preferred.append(pair.group("new").strip())
            replaced.append(re.sub(r"^(?:and|or)\s+", "", pair.group("old").strip(), flags=re.IGNORECASE))
    return list(dict.fromkeys(preferred)), list(dict.fromkeys(replaced))


#: A kind a ban illustrates with one token of its form: "Jira keys (like PLAT-123)", "never as digits like 10:40",
#: "PR numbers such as #482".
_FORM_EXAMPLE: Final = re.compile(
    r"\b(?P<kind>keys?|ids?|identifiers?|numbers?|codes?|digits?|numerals?|references?|refs?|handles?|hashtags?|tags?"
    r"|timestamps?|times?|dates?|tickets?|issues?|hashes|versions?|formats?|notation|style)"
    r"(?:\s*\(\s*(?:(?:like|such\s+as|e\.g\.,?|for\s+example,?|i\.e\.,?)\s+)?"
    r"|\s+(?:like|such\s+as|e\.g\.,?|for\s+example,?|for\s+instance,?|as\s+in)\s+)[\"“'‘`]?"
    r"(?P<token>[@#]?[A-Za-z0-9]+(?:[-_:/.][A-Za-z0-9]+)*)",
    re.IGNORECASE,
)
#: A ban on @handles: "Do not @mention anyone", "no @-mentions", "don't tag people with @", "no GitHub handles".
_HANDLE_BAN: Final = re.compile(
    r"(?<!\w)@\s*-?\s*mention|(?<!\w)@-?handles?\b|\bat-mention|\btag\w*\s+(?:\w+\s+){0,2}?with\s+(?:an?\s+)?[\"“'`]?@"
    r"|\b(?:github|gitlab|slack|twitter|x|instagram|tiktok|social(?:\s+media)?)\s+handles?\b",
    re.IGNORECASE,
)
#: Kinds whose every token has one form, named without an example: "no PR numbers" bans "#482".
_IMPLIED_FORMS: Final = (
    (re.compile(r"\b(?:PR|pull[- ]request|issue)\s+(?:numbers?|refs?|references?)\b", re.IGNORECASE), "#1"),
)


def _overlap(one: str, other: str) -> bool:
    """Whether either phrase holds the other as whole words ("Jira keys" and "keys", "PR" and "PR numbers")."""
    return any(re.search(rf"\b{re.escape(a)}\b", b, re.IGNORECASE) for a, b in ((one, other), (other, one)))


def _banned_forms(scope: str) -> tuple[list[str], list[str]]:
    """The examples whose form a ban bans, and the kinds they illustrate ("keys" of "Jira keys (like PLAT-123)"):
    a token with a digit and a letter or a mark ("PLAT-123", "10:40"), or one that starts with # or @; a handle
    where the ban is on @mentions."""
    forms: dict[str, None] = {}
    kinds: dict[str, None] = {}
    for match in _FORM_EXAMPLE.finditer(scope):
        token = match.group("token")
        if (token[0] in "@#" and len(token) > 1) or (re.search(r"\d", token) and re.search(r"[A-Za-z]|\W", token)):
            forms[token] = None
            kinds[match.group("kind")] = None
    if _HANDLE_BAN.search(scope) and not any(form.startswith("@") for form in forms):
        forms["@name"] = None
    for implied, example in _IMPLIED_FORMS:
        if (named := implied.search(scope)) and not any(form.startswith(example[0]) for form in forms):
            forms[example] = None
            kinds[named.group(0)] = None
    return list(forms), list(kinds)


#: A ban that leaves quotations alone: "No "we" outside of quotes".
_OUTSIDE_QUOTES: Final = re.compile(
    r"\boutside\s+(?:of\s+)?(?:the\s+)?(?:quotes|quotations|quotation\s+marks|quoted\s+(?:text|speech|material))\b",
    re.IGNORECASE,
)
#: Words a ban lists after a colon, without quotes: "No hype words: revolutionary, game-changing, world-class".
#: A ban on telling an outcome: "you never say whether a permit will be approved or refused", "do not say if the
#: application is approved or denied": the outcomes' words are what must not appear.
_NO_VERDICT: Final = re.compile(
    r"\b(?:say|tell|state|predict|guess|speculate|indicate|suggest|promise|confirm)\w*\s+(?:\w+\s+){0,3}?"
    r"(?:whether|if)\s+(?:[\w'’-]+\s+){1,6}?(?:will\s+be|would\s+be|is|are|was|gets?|be)\s+"
    r"(?P<a>[a-z]+(?:ed|ful))\s+or\s+(?P<b>[a-z]+(?:ed|ful)|not)\b",
    re.IGNORECASE,
)
_BANNED_LIST: Final = re.compile(
    r"\b(?:words?|phrases?|terms?|expressions?|buzzwords?|jargon)\s*:\s*"
    r"((?:[A-Za-z][\w'-]*(?:\s[A-Za-z][\w'-]*){0,2})(?:\s*,\s*(?:or\s+|and\s+)?[A-Za-z][\w'-]*(?:\s[A-Za-z][\w'-]*){0,2}){1,})"
    r"\s*(?:[.;)]|$)",
    re.IGNORECASE,
)
#: Verbs that ask for an input's value to appear when their object names the input ("mention the date").
_MENTIONING: Final = re.compile(
    r"mention\w*|includ\w*|stat(?:e|es|ing)|cit(?:e|es|ing)|referenc\w*|giv(?:e|es|ing)|us(?:e|es|ing)|quot\w*|"
    r"repeat\w*|add(?:s|ing)?",
    re.IGNORECASE,
)


_PLACEHOLDER_ASKED_FOR: Final = re.compile(
    r"\bmention(?:s|ing)?\b[^.;]{0,80}?\{\{?\s*(\w+)"  # "mention that they can join the beds at {site}"
    r"|\b(?:invite|ask|tell|encourage|direct|point|refer)\s+(?:them|him|her|the\s+\w+)\s+to\s+"
    # "invite them to write to {contact_email}"
    r"(?:write|e-?mail|call|phone|contact|visit|reply|go)\b[^.;{]{0,20}\{\{?\s*(\w+)"
    r"|\b(?:contact|call|e-?mail|write\s+to|reach)\s+(?:us\s+)?(?:at|on|via)\s+\{\{?\s*(\w+)",  # "call us on {phone}"
    re.IGNORECASE,
)


def _placeholders_asked_for(text: str, vocabulary: _Vocabulary) -> list[str]:
    """Inputs whose value the sentence asks the response to give, by their placeholder: what a verb of mentioning
    or a way to get in touch governs ("invite them to write to {contact_email}")."""
    found = (next(group for group in match.groups() if group) for match in _PLACEHOLDER_ASKED_FOR.finditer(text))
    return [field for field in dict.fromkeys(found) if field in vocabulary.inputs]


def _inputs_named_as_objects(text: str, vocabulary: _Vocabulary) -> dict[str, str]:
    """The inputs a mentioning verb's objects name by their words, each part of a listed object on its own ("the
    route number, the date and the alternative stop" of {route_number}, {service_date}, {alternative_stop})."""
    found: dict[str, str] = {}
    for match in _object_matches(text):
        if not _MENTIONING.fullmatch(match.group("verb")):
            continue
        obj = re.sub(r"\s*[(;].*$", "", match.group("object").strip())
        if re.match(r"(?:no|none|nothing|not|any|only|other|others)\b", obj, re.IGNORECASE):
            continue  # "add no others: {specs}": a ban or a kind, not the input the colon introduces
        for part in re.split(r",\s*(?:and\s+|or\s+)?|\s+or\s+|\s+and\s+", obj):
            field = vocabulary.input_named(part.strip()) if part.strip() else None
            if field is not None and re.match(r"us", match.group("verb"), re.I) and vocabulary.is_document(field):
                continue  # "Use the telemetry." of a block of text below its label: a source to draw on
            if field is not None:
                found[part.strip()] = field
    return found


#: A term written as an abbreviation or a code ("b.i.d.", "q6h"): a literal, as a name is.
_ABBREVIATION: Final = re.compile(r"(?:[a-z]\.){2,}|[a-z]+\d[a-z\d]*")


def _instances(text: str) -> list[str]:
    """The names a kind is illustrated with: "competitors such as Acme, Globex or Initech" -> the three names
    (capitalised, as names are, or abbreviations: "shorthand such as PO, b.i.d. or q6h"; "topics like politics"
    names a topic, which the phrase check reads already), or listed in parentheses as an open list or examples, in
    any case ("a product or chemical (apivar, oxalic, formic etc)", "jargon (e.g. PRV, trunk main)")."""
    listed = re.search(r"\((?:e\.g\.,?|for example,?|such as|like)\s+([^()]+?)\)|\(([^()]+?),?\s+etc\.?\)", text, re.I)
    if listed:  # "a chemical (apivar, oxalic, formic etc)", "jargon (e.g. PRV, trunk main)": the kind's examples
        items = re.sub(r"^no\s+", "", listed.group(1) or listed.group(2))  # "(no extra discounts, free drinks, etc.)"
        written = re.split(r",\s*(?:and\s+|or\s+)?|\s+or\s+|\s+and\s+", items)
        parts = [part.strip(" '\"“”") for part in written]
        # a quoted item is one phrase however long ('(no "bottomless", "all you can drink", etc.)'); an unquoted
        # one of more than three words is a clause, not a name
        longest = 6 if all(re.fullmatch(r"\s*[\"“'][^\"“”']+[\"”']\s*", part) for part in written) else 3
        if len(parts) >= 2 and all(part and len(part.split()) <= longest for part in parts):
            return parts
    match = re.search(  # a period inside or right after an abbreviation ("b.i.d., t.i.d.") ends nothing
        r"\b(?:such as|like|e\.g\.,?|for example,?|including)\s+((?:[^.;:()]|\.(?=\w|,|\s+(?:or|and)\b))+)",
        text,
        re.IGNORECASE,
    )
    if match is None:
        return []
    parts = [part.strip(" '\"") for part in re.split(r",\s*(?:and\s+|or\s+)?|\s+or\s+|\s+and\s+", match.group(1))]
    names = [
        part
        for part in parts
        if part and (part[0].isupper() or _ABBREVIATION.fullmatch(part)) and len(part.split()) <= 4
    ]
    return names if names and len(names) == len([part for part in parts if part]) else []


_VAGUE_OBJECTS: Final = frozenset(
    {"it", "them", "this", "that", "code", "text", "words", "section", "sections", "heading", "part"}
)
#: Words that point at something said elsewhere: "some combination of these components", "the items listed
#: below" name no term of their own.
_DEICTIC: Final = frozenset({"this", "that", "these", "those", "such", "following", "above", "below", "aforementioned"})


#: A second verb sharing the first one's object: "mention[ or hint at] compensation", "include[ or imply] a date".
_SECOND_VERB: Final = re.compile(
    rf"\b(?P<verb>{_CONTENT_VERBS})\s+(?:or|and|nor)\s+(?:hint(?:ing)?\s+at|allud(?:e|ing)\s+to|impl(?:y|ying)|"
    r"suggest(?:ing)?|promis(?:e|ing)|offer(?:ing)?|discuss(?:ing)?|mention(?:ing)?|refer(?:ring)?\s+to|"
    r"talk(?:ing)?\s+about)(?=\s+\S)",
    re.IGNORECASE,
)


def _named_phrases(text: str, *, banned: bool = False) -> list[str]:
    """Concrete things a content verb names: ``do not give an overall assessment or conclusion`` ->
    ["overall assessment", "conclusion"]. Whole phrases only (a phrase's single words are not checks of it).
    Left out: objects of style verbs ("avoid jargon", "use a warm tone": qualities, not terms), phrasal verbs
    ("make up definitions"), pronoun-led objects ("their definitions"), a kind of element ("include a call to
    action"), graded or abstract content ("all relevant context", "rich color") and coordinated adjectives
    ("a helpful, clear, and concise summary")."""
    out: list[str] = []
    text = _SECOND_VERB.sub(r"\g<verb>", text)
    for match in _object_matches(text):
        verb, obj = match.group("verb").lower(), match.group("object").strip()
        if re.search(r"\b(?:this|that|it|which|who)\s+$", text[: match.start()], re.IGNORECASE):
            continue  # "(this includes all caveats)": a description, not an instruction
        if re.search(
            r"\b(?:the|a|an|each|every|your|our|my|their|its)\s+(?:[a-z-]+\s+)?$", text[: match.start()], re.I
        ):
            continue  # "in the list below", "from the dish name alone": a noun, not the verb "list" or "name"
        if verb.endswith("s") and re.search(r"\b(?:for|of|on|to|with|about|by)\s+$", text[: match.start()], re.I):
            continue  # "true for mentions of bereavement": a noun, what a value stands for, not the verb "mention"
        if obj.split() and obj.split()[0].lower() in _WH:
            continue  # "say which tests were added or changed": a question the response answers, not its words
        if re.match(r"\s+(?:that|which|who|whose)\b", text[match.end() :], re.IGNORECASE):
            continue  # "any medication that was not dispensed", "warning signs that mean ...": the ones a clause picks
            # out, which the data decides, not the word itself
        if re.match(r"(?:and|or|but|then|nor)\b", obj, re.IGNORECASE):
            continue  # "its ingredient list and work out which ...": a noun before a conjunction, no object
        if re.search(r"\b(?:if|when|whenever|unless|in case|once)\b", text[: match.start()], re.IGNORECASE):
            continue  # "... if the user mentions self-harm": the condition's words, not the response's
        if re.search(
            r"\b(?:characters|words|letters|chars|sentences|lines)\b(?:\s+or\s+(?:fewer|less|more))?\s*,?\s*$",
            text[: match.start()],
            re.IGNORECASE,
        ):
            continue  # "under 250 characters, including spaces": what the count counts, not a term
        if not banned and re.match(r"any\b", obj, re.IGNORECASE):
            continue  # "mention any red cards": if there were some, which the data decides
        if not banned and re.search(r"\bonly\s+$", text[: match.start()], re.IGNORECASE):
            continue  # "only list tasks that somebody agreed to do": which ones may appear, not the word "tasks"
        if re.fullmatch(r"nam(?:e|es|ing)|identif\w*|specif\w*", verb) and not (banned and obj[:1].isupper()):
            continue  # "name the owning team": which team the notes say; "never name guests": their names, not words
            # ("never name Globex" bans the name itself)
        if not banned and re.fullmatch(r"writ\w*|output|print", verb):
            continue  # "Write the recipe ...": the response itself, not a word in it ("do not write X" bans X)
        if re.match(r"(?:provid|suppl|present|equip|furnish)\w*$", verb) and re.match(
            r"\s+with\b", text[match.end() :]
        ):
            continue  # "provide the user with insights": whom the response serves, not what it says
        if banned and re.fullmatch(r"writ\w*|say\w*", verb) and re.match(r"about\s+\w", obj, re.IGNORECASE):
            obj = obj[len("about") :].strip()  # "never write about cash": cash, as "never talk about" it
        inner = re.match(rf"(?:{_CONTENT_VERBS})\s+", obj, re.IGNORECASE)
        if inner and re.fullmatch(_STYLE_VERBS, verb, re.IGNORECASE):  # "avoid mentioning prices"
            verb, obj = inner.group(0).strip().lower(), obj[inner.end() :]
        framed = verb.startswith("the ")
        frame = re.match(r"(?:the\s+|an?\s+)?(?:key)?(?:words?|phrases?|terms?|expressions?)\b\s*", obj, re.IGNORECASE)
        if frame:
            framed, obj = True, obj[frame.end() :]
            if not obj.strip():
                continue  # the term itself is quoted
        if not framed and re.fullmatch(_STYLE_VERBS, verb, re.IGNORECASE):
            continue
        first = obj.split()[0].lower() if obj.split() else ""
        if first in _PARTICLES:
            continue
        slot = re.match(r"(?:(?:the|an?|any|all)\s+)?([a-z]+)\s+of\b", obj, re.IGNORECASE)
        if slot and slot.group(1).lower() in _ABSTRACT:
            continue  # "the title of the discussion or lecture": a slot, whatever follows "of"
        parts = [part for part in re.split(r",\s*(?:and\s+|or\s+)?|\s+or\s+|\s+and\s+|/", obj) if part.strip()]
        if obj.split() and obj.split()[0].lower() in {"it", "them", "this", "that", "these", "those"}:
            continue  # "don't mention it or hint at it": what "it" stands for is said elsewhere
        parts = [part for part in parts if not _starts_clause(part)]
        # "one target, phrased as an action": a participle after the comma says how, it is no second term
        parts = [part for part in parts if not re.fullmatch(r"[a-z]+ed", part.strip())]
        if any(set(part.lower().split()) <= _EVALUATIVE for part in parts):
            continue  # adjectives coordinated before one noun
        if not framed and len(parts) > 1 and 2 * sum(map(_names_a_kind, parts)) >= len(parts):
            continue  # items of a list are alike: "points, facts, or arguments" lists kinds of content, not terms
        for part in parts:
            phrase = _literal_phrase(part, framed=framed)
            if phrase is not None and not set(phrase.lower().split()) <= _ENGLISH_FUNCTION_WORDS | {"a", "an"}:
                out.append(phrase)  # not "the" of "include the by-the-glass price": no term at all
    return list(dict.fromkeys(out))


def _abstract(word: str) -> bool:
    """Whether a noun, or its singular ("jargons"), names a kind of content or a quality (:data:`_ABSTRACT`)."""
    singulars = {word, word[:-1], word[:-2], word[:-3] + "y"} if word.endswith("s") else {word}
    return bool(singulars & _ABSTRACT)


def _names_a_kind(part: str) -> bool:
    """Whether a listed noun phrase names a kind of content or a quality rather than a term."""
    words = re.sub(rf"^{_DETERMINERS}", "", part.strip(" '-").lower()).split()
    return bool(words) and (bool(set(words) & _EVALUATIVE) or _abstract(words[0]) or _abstract(words[-1]))


def _object_matches(text: str) -> Iterator[re.Match[str]]:
    """A verb-object match at every word where one starts (overlapping: "can be improved and provide the
    improvement" has an object for "be" and one for "provide")."""
    for word in re.finditer(r"\b\w", text):
        match = _NAMED_OBJECT.match(text, word.start())
        if match is not None:
            yield match


def _starts_clause(part: str) -> bool:
    """``explain how they were used`` after "and" is a second instruction, not a coordinated noun phrase."""
    first = part.strip().split()[0].lower() if part.split() else ""
    negated = first in {"don't", "dont", "do", "never", "not", "please"}  # "... and don't refer to X": a second ban
    return negated or first in _IMPERATIVES or first in _WH or re.fullmatch(_CONTENT_VERBS, first) is not None


#: Nouns that name an attribute of the noun before them: "mention the warranty period" asks for the warranty
#: and how long it lasts, which no answer words as "warranty period"; the head noun is what must appear.
_ATTRIBUTES: Final = frozenset(
    """period duration length date dates time times deadline price prices cost costs amount amounts fee fees
    name names title titles size sizes number numbers version versions details detail status type level rate
    limit limits terms""".split()  # noqa: SIM905
)
#: Adverbs that can close a verb's object ("do not give the final answer directly"): not part of the term.
_TRAILING_ADVERBS: Final = frozenset(
    {
        "directly",
        "explicitly",
        "immediately",
        "outright",
        "verbatim",
        "again",
        "anywhere",
        "yourself",
        "instead",
        "only",
        "exactly",  # "state the delivery window exactly as given"
        "precisely",
        "clearly",
        "plainly",  # "state the risk plainly"
        "briefly",
        "concisely",
        "simply",
        "politely",
        "calmly",
        "accurately",
        "correctly",
        "first",
        "upfront",
    }
)
_WH: Final = frozenset({"how", "what", "why", "whether", "where", "when", "which", "who", "whom", "whose"})


#: Words ending in -ing that are nouns at the head of a term ("shipping costs", "opening hours").
_ING_NOUNS: Final = frozenset(
    """shipping billing booking pricing parking training meeting building clothing wedding morning evening housing
    funding marketing opening closing heading setting warning rating listing packaging seating lighting catering
    recording reading writing timing spring string ceiling""".split()  # noqa: SIM905
)


def _literal_phrase(part: str, *, framed: bool) -> str | None:
    """The term a noun phrase names, or None when it names a kind, a quality or something said before."""
    part = part.strip(" '-").lower()
    if _ANAPHORIC.match(part) or re.match(r"(?:and|or|but|then|of|for|with|to|in|on|by|from|about|at|as)\b", part):
        return None  # "name and input" read from "name" as a verb: no object of its own
    if re.match(rf"(?:{_AT_MOST}|{_AT_LEAST}|{_BELOW}|{_ABOVE}|exactly|\d|{'|'.join(_NUMBER_WORDS)})\b", part):
        return None  # "at least one emoji": a count (the count family reads it), not a term
    indefinite = re.match(r"an?\s", part) is not None
    part = re.sub(rf"^{_DETERMINERS}", "", part)
    if _ANAPHORIC.match(part):
        return None
    words = part.split()
    if len(words) > 1 and words[0].endswith("ed") and words[1] in _TRAILING_ADVERBS:
        return None  # "these, spelled exactly": how they are written, not a term
    while len(words) > 1 and words[-1] in _TRAILING_ADVERBS:  # "give the final answer directly"
        words = words[:-1]
    if not words or words[0] in _TRAILING_ADVERBS:
        return None  # "the category name only": a limit on the answer, not the word "only"
    if len(words) > 1 and words[0].endswith("ed") and words[1] in ("exactly", "as", "correctly", "like"):
        return None  # "spelled exactly as in the list": how it is written, not a term
    if not framed and set(words) & _DEICTIC:
        return None
    for index, word in enumerate(words[1:], 1):  # "color provided in ...", "criticisms you have": relative clauses
        if (len(word) > 4 and word.endswith("ed")) or word in _PRONOUNS or word in _WH:
            words = words[:index]
            break
    if not 1 <= len(words) <= 4 or not any(len(word) > 2 for word in words):
        return None
    if not framed and len(words) >= 2 and words[0].endswith("ing") and words[0] not in _ING_NOUNS:
        return None  # "include wearing closed-toe shoes": an action to describe, in whatever words, not a term
    if len(words) >= 2 and words[-1] in _ATTRIBUTES:  # "the warranty period": the warranty, with its value
        if re.search(r"['’]s?$", words[-2]) or words[-1] in ("name", "names", "title", "titles", "number", "numbers"):
            return None  # "the customer's name", "the product name": the name itself, never the word "product"
        words = words[:-1]
    phrase = " ".join(words)
    if framed:
        return phrase
    if indefinite or phrase in _UNITS or set(words) & _VAGUE_OBJECTS:
        return None
    if set(words) & _EVALUATIVE or _abstract(words[-1]) or _abstract(words[0]):
        return None
    return phrase


#: A line after a blank one that instructs rather than shows: an imperative, a ban, or a "you"/"the response" rule.
_INSTRUCTS: Final = re.compile(
    rf"(?:{'|'.join(sorted(_IMPERATIVES))}|do not|don't|never|always|please|you (?:must|should)|the (?:response|answer|"
    r"output) (?:must|should))\b",
    re.IGNORECASE,
)


def example_blocks(prompt: str) -> list[tuple[int, int]]:
    """Character spans of example demonstrations (they show an answer and ask for nothing): from an ``Example
    output:`` line to a blank line before an unindented label, a placeholder line, or the end of the prompt."""
    spans: list[tuple[int, int]] = []
    lines = prompt.splitlines(keepends=True)
    offset = 0
    index = 0
    while index < len(lines):
        line = lines[index]
        # "ample" first: every intro says "example" or "sample", and the editor asks on every edit
        if "ample" in line.lower() and _EXAMPLE_INTRO.search(line.strip()):
            start = offset + len(line)
            end = start
            j = index + 1
            while j < len(lines):
                candidate = lines[j].strip()
                if re.fullmatch(r"[A-Z][A-Z ]{2,}:?|\{\{?\w+\}?\}|(?:end of )?examples? end\.?", candidate, re.I):
                    break
                if j > index + 1 and not lines[j - 1].strip() and _INSTRUCTS.match(candidate):
                    break  # "... the example.\n\nUse 2 or 3 sentences, ...": the instructions resume
                end += len(lines[j])
                j += 1
            spans.append((start, end))
            offset = end
            index = j
            continue
        offset += len(line)
        index += 1
    return spans


def _inside(instruction: Instruction, spans: list[tuple[int, int]]) -> bool:
    return any(start <= instruction.start < end for start, end in spans)


def _example_drafts(prompt: str, instruction: Instruction, spans: list[tuple[int, int]]) -> Iterator[_Draft]:
    """Structure copied from the example after this sentence: its second-level headings, or its JSON keys."""
    block = next((prompt[start:end] for start, end in spans if start >= instruction.end - 1), "")
    if not block.strip():
        return
    stripped = block.strip().strip("`").removeprefix("json").strip()
    try:
        value = json.loads(stripped)
    except ValueError:
        value = None
    if isinstance(value, dict) and value:
        keys = sorted(map(str, value))
        yield _Draft(
            "json_keys_like_the_example",
            EXAMPLE_DEMONSTRATION,
            "A JSON object with the example's keys: " + ", ".join(keys) + ".",
            f"checks.json_has_keys(response, {_literal(keys)})",
            {"family": "json", "keys": keys},
        )
        return
    found = [(len(hashes), title.strip(" :*")) for hashes, title in _MD_HEADING.findall(block)]
    if not found:
        return
    top = min(level for level, _ in found)
    sections = [re.sub(r"\s*\(.*\)$", "", title) for level, title in found if level == top + 1]
    if top == 1 or len([1 for level, _ in found if level == top]) == 1:
        yield _Draft(
            "starts_with_a_title_like_the_example",
            EXAMPLE_DEMONSTRATION,
            "Starts with a title, as the example does.",
            "checks.starts_with_title(response)",
            {"family": "starts_with_title"},
        )
    if sections:
        yield _Draft(
            "sections_like_the_example",
            EXAMPLE_DEMONSTRATION,
            "Has the example's sections: " + ", ".join(sections) + ".",
            f"all(checks.has_heading(response, t) for t in {_literal(sections)})",
            {"family": "headings", "headings": sections},
        )
        for title in sections:
            yield _heading_draft(title, EXAMPLE_DEMONSTRATION)
    yield _Draft(
        "markdown_headings_like_the_example",
        EXAMPLE_DEMONSTRATION,
        "Uses markdown headings, as the example does.",
        "checks.count(response, 'headings') >= 1",
        {"family": "count", "unit": "headings", "min": 1, "max": None},
    )
