import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative, resolve } from 'node:path'
import { expect, test } from 'vitest'
import { importCircles } from '../support/importGraph.ts'

const root = resolve(import.meta.dirname, '../..')

// docs/architecture.md, rule 1: imports point one way, inside a layer too. A circle, even of types only, means two
// modules that each need the other: neither can be read, tested or moved alone.
test('no import circle in src/ or worker/ (type-only imports included)', () => {
  const { modules, circles } = importCircles([resolve(root, 'src'), resolve(root, 'worker')])
  expect(modules).toBeGreaterThan(150)
  expect(circles.map((circle) => circle.map((file) => relative(root, file)))).toEqual([])
})

test('a circle is found, through a type-only import and a subfolder too', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-circles-'))
  try {
    mkdirSync(join(dir, 'sub'))
    writeFileSync(join(dir, 'a.ts'), "import { b } from './sub/b.ts'\nexport const a = b\n")
    writeFileSync(join(dir, 'sub', 'b.ts'), "import type { C } from '../c.ts'\nexport const b = 1 as C\n")
    writeFileSync(join(dir, 'c.ts'), "import {\n  a,\n} from './a.ts'\nexport type C = number\nexport const c = a\n")
    writeFileSync(join(dir, 'd.ts'), "import { a } from './a.ts'\nexport const d = a\n")
    const { modules, circles } = importCircles([dir])
    expect(modules).toBe(4)
    expect(circles.map((circle) => circle.map((file) => relative(dir, file)))).toEqual([['a.ts', 'c.ts', join('sub', 'b.ts')]])
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
