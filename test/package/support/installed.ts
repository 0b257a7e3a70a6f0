import { lstatSync, readdirSync } from 'node:fs'
import { join } from 'node:path'

/** Every package folder (one with a package.json) under `modules` (a node_modules), nested ones included. */
export function installedPackages(modules: string): string[] {
  const found: string[] = []
  const visit = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (!entry.isDirectory() || entry.name.startsWith('.')) continue
      const path = join(dir, entry.name)
      if (entry.name.startsWith('@')) visit(path)
      else {
        found.push(path)
        if (lstatSync(join(path, 'node_modules'), { throwIfNoEntry: false })?.isDirectory()) visit(join(path, 'node_modules'))
      }
    }
  }
  visit(modules)
  return found.filter((path) => lstatSync(join(path, 'package.json'), { throwIfNoEntry: false })?.isFile())
}

/** The bytes of every file under `dir` (symbolic links not followed), as `du --apparent-size` counts them. */
export function diskBytes(dir: string): number {
  let total = 0
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) total += lstatSync(join(entry.parentPath, entry.name)).size
  }
  return total
}
