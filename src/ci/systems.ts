/** The CI systems `kcache workflow --ci` writes files for (github is the default); no imports, for main.ts's start-up. */
export const CI_SYSTEMS = ["github", "gitlab", "buildkite", "jenkins"] as const;
export type CiSystem = (typeof CI_SYSTEMS)[number];
