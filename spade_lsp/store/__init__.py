"""Persistence: the workspace's SQLite store (``.spade/spade.db``), its schema, and one repository per table
family. This package is the only place that holds SQL or touches the database; everything else reads and
writes through the names exported here.

Names load on first use: :class:`Store` builds on sqlite-utils, which imports numpy, and the language server
only ever opens the store read-only (:func:`open_readonly`) without it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from spade_lsp._lazy import lazy_exports
from spade_lsp.store._paths import STORE_DIR, STORE_FILE

if TYPE_CHECKING:
    from spade_lsp.store._comparisons import insert_comparison
    from spade_lsp.store._damage import store_damage
    from spade_lsp.store._database import DEFAULT_BUSY_TIMEOUT_S, Store
    from spade_lsp.store._evaluations import StoredEvalRun, insert_eval_run, stored_eval_run
    from spade_lsp.store._history import (
        ChangeRow,
        DeltaRow,
        HistoryRepository,
        IntroducingChange,
        NeighbourVersion,
        NewestVersion,
        SentenceChangeRow,
        SentenceRow,
        SentenceValues,
    )
    from spade_lsp.store._jobs import (
        ACTIVE_STATUSES,
        FINISHED_STATUSES,
        INTERRUPTED,
        LEASE_S,
        MAX_ATTEMPTS,
        RENEW_EVERY_S,
        Job,
        JobNotFoundError,
        JobQueue,
        JobStateError,
        Recovery,
    )
    from spade_lsp.store._llm import (
        ClaimedLLMBatches,
        LLMBatchState,
        NewLLMBatch,
        OpenLLMBatch,
        StoredCapability,
        SubmittedLLMBatch,
        cached_responses,
        claim_llm_batches,
        close_llm_batch_lost,
        collect_llm_batch,
        delete_llm_batch,
        llm_batch_state,
        llm_cache_size,
        load_capability,
        model_responses,
        save_responses,
        submitted_llm_batches,
        take_over_llm_batch,
        update_llm_batch,
    )
    from spade_lsp.store._overview import (
        EvalRunSummaryRow,
        ReliabilityRow,
        SelectionRow,
        newest_comparison_document,
        newest_eval_run,
        newest_reliability,
        newest_selection,
    )
    from spade_lsp.store._owners import SettledRun, settle_orphaned_runs
    from spade_lsp.store._plan_cache import PLAN_CACHE_ENV, PlanCache, plan_cache, plan_cache_path
    from spade_lsp.store._prompt_index import prompt_id, recorded_prompt_keys, version_count
    from spade_lsp.store._prompts import DatabaseError, prompt_key
    from spade_lsp.store._readonly import data_version, open_readonly
    from spade_lsp.store._reviews import ReviewRecords, record_acceptances, record_generated_code, review_records
    from spade_lsp.store._runs import (
        Judgement,
        JudgeRunKind,
        SampledOutputs,
        SampleOutputRow,
        SampleResultRow,
        StoredAnswer,
        finish_judge_run,
        finish_sample_run,
        latest_sampled_outputs,
        models_sampled,
        note_history,
        recent_sampled_outputs,
        sampled_outputs_of_run,
        save_judgements,
        save_sample_round,
        start_judge_run,
        start_sample_run,
        stored_comparison,
        stored_document,
    )
    from spade_lsp.store._selections import (
        EvalRunRow,
        SelectionRecord,
        load_subsumption_rows,
        newest_finished_eval_run,
        newest_selected,
        newest_selections,
        save_selection_record,
        save_subsumption_rows,
    )
    from spade_lsp.store._verdicts import candidate_verdicts, save_candidate_verdicts

__all__ = [
    "ACTIVE_STATUSES",
    "DEFAULT_BUSY_TIMEOUT_S",
    "FINISHED_STATUSES",
    "INTERRUPTED",
    "LEASE_S",
    "MAX_ATTEMPTS",
    "PLAN_CACHE_ENV",
    "RENEW_EVERY_S",
    "STORE_DIR",
    "STORE_FILE",
    "ChangeRow",
    "ClaimedLLMBatches",
    "DatabaseError",
    "DeltaRow",
    "EvalRunRow",
    "EvalRunSummaryRow",
    "HistoryRepository",
    "IntroducingChange",
    "Job",
    "JobNotFoundError",
    "JobQueue",
    "JobStateError",
    "JudgeRunKind",
    "Judgement",
    "LLMBatchState",
    "NeighbourVersion",
    "NewLLMBatch",
    "NewestVersion",
    "OpenLLMBatch",
    "PlanCache",
    "Recovery",
    "ReliabilityRow",
    "ReviewRecords",
    "SampleOutputRow",
    "SampleResultRow",
    "SampledOutputs",
    "SelectionRecord",
    "SelectionRow",
    "SentenceChangeRow",
    "SentenceRow",
    "SentenceValues",
    "SettledRun",
    "Store",
    "StoredAnswer",
    "StoredCapability",
    "StoredEvalRun",
    "SubmittedLLMBatch",
    "cached_responses",
    "candidate_verdicts",
    "claim_llm_batches",
    "close_llm_batch_lost",
    "collect_llm_batch",
    "data_version",
    "delete_llm_batch",
    "finish_judge_run",
    "finish_sample_run",
    "insert_comparison",
    "insert_eval_run",
    "latest_sampled_outputs",
    "llm_batch_state",
    "llm_cache_size",
    "load_capability",
    "load_subsumption_rows",
    "model_responses",
    "models_sampled",
    "newest_comparison_document",
    "newest_eval_run",
    "newest_finished_eval_run",
    "newest_reliability",
    "newest_selected",
    "newest_selection",
    "newest_selections",
    "note_history",
    "open_readonly",
    "plan_cache",
    "plan_cache_path",
    "prompt_id",
    "prompt_key",
    "recent_sampled_outputs",
    "record_acceptances",
    "record_generated_code",
    "recorded_prompt_keys",
    "review_records",
    "sampled_outputs_of_run",
    "save_candidate_verdicts",
    "save_judgements",
    "save_responses",
    "save_sample_round",
    "save_selection_record",
    "save_subsumption_rows",
    "settle_orphaned_runs",
    "start_judge_run",
    "start_sample_run",
    "store_damage",
    "stored_comparison",
    "stored_document",
    "stored_eval_run",
    "submitted_llm_batches",
    "take_over_llm_batch",
    "update_llm_batch",
    "version_count",
]


__getattr__ = lazy_exports(__name__, globals())
