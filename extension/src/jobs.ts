// The status-bar item's text for the server's state and its running jobs (`spade/jobStatus`). No `vscode` import.

export interface JobStatus {
  id: string;
  title: string;
  prompt: string;
  message: string | null;
  percentage: number | null;
}

export type ServerState = "starting" | "running" | "stopped" | "unavailable";

export interface StatusView {
  text: string;
  tooltip: string;
  /** The command a click runs: the log while things work, a restart once the server is down. */
  command: "spade-lsp.showLog" | "spade-lsp.restart";
}

/** `spade/jobStatus` params, checked: anything malformed is dropped rather than shown half-formed. */
export function parseJobs(params: unknown): JobStatus[] {
  const jobs = (params as { jobs?: unknown } | null)?.jobs;
  if (!Array.isArray(jobs)) {
    return [];
  }
  return jobs.flatMap((job): JobStatus[] => {
    if (typeof job !== "object" || job === null || typeof job.id !== "string" || typeof job.title !== "string") {
      return [];
    }
    return [
      {
        id: job.id,
        title: job.title,
        prompt: typeof job.prompt === "string" ? job.prompt : "",
        message: typeof job.message === "string" ? job.message : null,
        percentage: typeof job.percentage === "number" && Number.isFinite(job.percentage) ? job.percentage : null,
      },
    ];
  });
}

function describe(job: JobStatus): string {
  const percent = job.percentage === null ? "" : ` ${Math.round(job.percentage)}%`;
  return `${job.title}${job.prompt ? ` (${job.prompt})` : ""}${percent}${job.message ? `: ${job.message}` : ""}`;
}

export function statusView(state: ServerState, jobs: readonly JobStatus[]): StatusView {
  if (state === "starting") {
    return { text: "$(loading~spin) SPADE", tooltip: "SPADE: starting the server", command: "spade-lsp.showLog" };
  }
  if (state === "stopped" || state === "unavailable") {
    const why = state === "stopped" ? "the server stopped" : "the server cannot start (see the notification)";
    return { text: "$(error) SPADE", tooltip: `SPADE: ${why}. Click to restart.`, command: "spade-lsp.restart" };
  }
  if (jobs.length === 0) {
    return { text: "$(check) SPADE", tooltip: "SPADE: no background jobs. Click for the log.", command: "spade-lsp.showLog" };
  }
  const first = jobs[0];
  const percent = first.percentage === null ? "" : ` ${Math.round(first.percentage)}%`;
  const more = jobs.length > 1 ? ` +${jobs.length - 1}` : "";
  return {
    text: `$(sync~spin) SPADE: ${first.title}${percent}${more}`,
    tooltip: ["SPADE background jobs:", ...jobs.map((job) => `- ${describe(job)}`)].join("\n"),
    command: "spade-lsp.showLog",
  };
}

/** How long a job runs before it also gets a notification with a Cancel button (shorter ones only flash). */
export const LONG_JOB_MS = 1500;

export interface JobWatchers {
  /** A job ran longer than LONG_JOB_MS: show it; `cancel` is called when the user cancels it. */
  show(job: JobStatus): void;
  update(job: JobStatus): void;
  end(id: string): void;
}

/** Which running jobs get a notification: each one still running LONG_JOB_MS after it first appeared, until it
 * ends. `later` schedules (setTimeout in the extension, a fake clock in tests). */
export class LongJobs {
  private readonly started = new Map<string, JobStatus>();
  private readonly shown = new Set<string>();

  constructor(
    private readonly watchers: JobWatchers,
    private readonly later: (callback: () => void, ms: number) => void,
  ) {}

  changed(jobs: readonly JobStatus[]): void {
    const now = new Map(jobs.map((job) => [job.id, job]));
    for (const id of [...this.started.keys()]) {
      if (!now.has(id)) {
        this.started.delete(id);
        if (this.shown.delete(id)) {
          this.watchers.end(id);
        }
      }
    }
    for (const job of jobs) {
      const known = this.started.has(job.id);
      this.started.set(job.id, job);
      if (!known) {
        this.later(() => {
          const current = this.started.get(job.id);
          if (current && !this.shown.has(job.id)) {
            this.shown.add(job.id);
            this.watchers.show(current);
          }
        }, LONG_JOB_MS);
      } else if (this.shown.has(job.id)) {
        this.watchers.update(job);
      }
    }
  }
}
