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
