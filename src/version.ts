import packageJson from '../package.json' with { type: 'json' }

/** The package version (GET /version, the release feed's comparison). */
export const version: string = packageJson.version
