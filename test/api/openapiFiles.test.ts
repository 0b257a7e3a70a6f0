import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { GEN_COMMAND, generatedFiles } from '../../scripts/openapi.ts'

const repo = fileURLToPath(new URL('../..', import.meta.url))

/** CI's check that the committed document and types are those of the routes (docs/decisions/0046). */
describe('the committed openapi.json and openapi.gen.ts', () => {
  it(`are what \`${GEN_COMMAND}\` makes of the routes now`, async () => {
    for (const [file, wanted] of Object.entries(await generatedFiles())) {
      const committed = readFileSync(join(repo, file), 'utf8')
      expect(committed === wanted, `${file} is stale: run \`${GEN_COMMAND}\` and commit it`).toBe(true)
    }
  }, 60_000)
})
