"""Judges: where code cannot decide, LLMs judge, and the judges themselves are measured (docs/judges.md).

Public API::

    Scale.boolean() / .likert(1, 5) / .discrete([...])   # typed scales, checked on every answer
    Question, Answer, ask_many(client, questions)         # batched structured judging with re-asks
    agreement(judgements, labels), cohen_kappa(table)     # alignment with human labels
    LLMVerifier                                           # PASS/FAIL with reasons (reliability.Verifier)
    grade_with_notes(workspace, prompt, settings=...)     # grading notes, with and without notes
    Pipeline.load(path) / Pipeline.from_dict(...)         # compound judge pipelines (TOML or YAML)
    measure_noise(...), noise_report(S[input][output][resample])  # judge disagreement vs generator variance
    PromptResponseTest, TestItem, run_prompt_test, TESTS  # ModelGauge-style prompt-response tests
    load_test_file(path).build()                          # ... declared in a YAML file (`spade test FILE`)

Names load on first use: nothing here is imported by the language server.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spade_lsp._lazy import lazy_exports

if TYPE_CHECKING:  # the names below load on first use
    from spade_lsp.judges._agreement import (
        Agreement,
        Kappa,
        agreement,
        cohen_kappa,
        positive_rate,
    )
    from spade_lsp.judges._ask import (
        Answer,
        JudgeClients,
        Question,
        answer_schema,
        ask_many,
        read_answer,
    )
    from spade_lsp.judges._grading import (
        GRADING_SCALE,
        grade_with_notes,
        grading_report,
        mcnemar_exact,
        render_grading_report,
    )
    from spade_lsp.judges._items import (
        JudgeItem,
        items_from_examples,
    )
    from spade_lsp.judges._noise import (
        measure_noise,
        noise_items,
        noise_report,
    )
    from spade_lsp.judges._pipeline import (
        Pipeline,
        PipelineResult,
        render_pipeline_report,
        run_pipeline,
    )
    from spade_lsp.judges._prompt_tests import (
        TESTS,
        Annotator,
        CodeAnnotator,
        Interaction,
        ItemAnnotations,
        JudgeAnnotator,
        PromptResponseTest,
        PromptWithContext,
        TestItem,
        aggregate,
        render_test_report,
        run_prompt_test,
    )
    from spade_lsp.judges._scales import (
        OutOfScale,
        Scale,
    )
    from spade_lsp.judges._test_files import (
        TestFile,
        load_test_file,
        looks_like_test_file,
    )
    from spade_lsp.judges._verifier import (
        DEFAULT_CRITERIA,
        VERDICT_SCHEMA,
        LLMVerifier,
        read_verdict,
    )


__all__ = [
    "DEFAULT_CRITERIA",
    "GRADING_SCALE",
    "TESTS",
    "VERDICT_SCHEMA",
    "Agreement",
    "Annotator",
    "Answer",
    "CodeAnnotator",
    "Interaction",
    "ItemAnnotations",
    "JudgeAnnotator",
    "JudgeClients",
    "JudgeItem",
    "Kappa",
    "LLMVerifier",
    "OutOfScale",
    "Pipeline",
    "PipelineResult",
    "PromptResponseTest",
    "PromptWithContext",
    "Question",
    "Scale",
    "TestFile",
    "TestItem",
    "aggregate",
    "agreement",
    "answer_schema",
    "ask_many",
    "cohen_kappa",
    "grade_with_notes",
    "grading_report",
    "items_from_examples",
    "load_test_file",
    "looks_like_test_file",
    "mcnemar_exact",
    "measure_noise",
    "noise_items",
    "noise_report",
    "positive_rate",
    "read_answer",
    "read_verdict",
    "render_grading_report",
    "render_pipeline_report",
    "render_test_report",
    "run_pipeline",
    "run_prompt_test",
]


__getattr__ = lazy_exports(__name__, globals())
