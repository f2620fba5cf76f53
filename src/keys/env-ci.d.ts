// env-ci ships no types; what kcache reads of its answer (github.com/semantic-release/env-ci, README).
declare module "env-ci" {
  interface EnvCiAnswer {
    isCi: boolean;
    /** The CI's name ("CircleCI"); absent where no service was recognised. */
    name?: string;
    service?: string;
    commit?: string;
    /** The branch built; for a pull request, its base branch. */
    branch?: string;
    tag?: string;
    pr?: string;
    isPr?: boolean;
    prBranch?: string;
    build?: string;
  }
  export default function envCi(options?: { env?: NodeJS.ProcessEnv; cwd?: string }): EnvCiAnswer;
}
