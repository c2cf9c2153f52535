import type { MagicNumbers } from '../domain/detect-type'

type FileTypeModule = { fileTypeFromBuffer(b: Uint8Array): Promise<{ mime: string } | undefined> }
let fileType: Promise<FileTypeModule> | undefined
/**
 * `file-type` is ESM only and the service compiles to CommonJS: with `module: Node16`, TypeScript
 * keeps this `import()` as it is (never a `require`), so Node loads it as ESM.
 */
const loadFileType = () => (fileType ??= import('file-type/core') as Promise<FileTypeModule>)

/** The domain's MagicNumbers over `file-type` (a kept library of magic numbers). */
export const fileTypeMagic: MagicNumbers = async (head) => {
  const { fileTypeFromBuffer } = await loadFileType()
  return (await fileTypeFromBuffer(head))?.mime
}
