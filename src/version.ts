import packageJson from '../packages/sluice/package.json' with { type: 'json' }

/**
 * The version (GET /version, the release feed's comparison, the page's check of its worker): one for both
 * packages, written in packages/sluice/package.json; the build refuses @sluice/node's if it differs.
 */
export const version: string = packageJson.version
