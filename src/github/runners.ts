import { profileId } from "../config/profile-id.js";

/** Labels of GitHub-hosted runners; a job on anything else runs on the user's own machines. */
const HOSTED = /^(ubuntu|windows|macos)-/;

/** Whether a job runs on self-hosted runners (a pull request from a fork would run its code there). */
export function selfHosted(runsOn: string | string[]): boolean {
  const labels = Array.isArray(runsOn) ? runsOn : [runsOn];
  return labels.some((l) => l === "self-hosted") || !labels.some((l) => HOSTED.test(l));
}

/** The `if:` that keeps pull requests from forks off self-hosted runners. */
export const NO_FORK_PRS =
  "github.event_name != 'pull_request' || github.event.pull_request.head.repo.full_name == github.repository";

/** A profile's name as a job id: letters, digits, - and _. */
export function jobId(profile: string): string {
  return profileId(profile);
}
