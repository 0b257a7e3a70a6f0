import * as v from 'valibot'
import { expect } from 'vitest'

/**
 * Checks a real answer against the valibot schema openapi.json documents it with: every field the schema requires
 * is there with its type, and nothing it does not name (an object schema leaves out of its output the keys it does
 * not know, so an answer with an undocumented field differs from what it parses to). Gives the answer, typed.
 */
export function expectAnswer<S extends v.GenericSchema>(schema: S, answer: unknown, where = 'answer'): v.InferOutput<S> {
  const result = v.safeParse(schema, answer)
  if (!result.success) {
    const issues = result.issues.map((i) => `${v.getDotPath(i) ?? '(root)'}: ${i.message}`).join('; ')
    throw new Error(`${where} is not what openapi.json documents: ${issues}\n${JSON.stringify(answer)}`)
  }
  expect(result.output, `${where}: a field openapi.json does not document`).toEqual(answer)
  return result.output
}
