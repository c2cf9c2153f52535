import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { inflateSync } from 'node:zlib'

/**
 * Poppler's tools (Debian's poppler-utils, which scripts/ensure-chromium.mjs installs for `npm
 * test`), run on a PDF the way a reader of the clinic's records would: text and positions
 * (pdftotext -bbox), a page as a picture (pdftoppm -png), the attached files (pdfdetach).
 */
function poppler(tool: string, args: string[], pdf: Buffer): { dir: string; stdout: string } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'consent-pdf-'))
  const file = path.join(dir, 'in.pdf')
  writeFileSync(file, pdf)
  const r = spawnSync(
    `/usr/bin/${tool}`,
    [...args.map((a) => a.replace('{in}', file).replace('{dir}', dir))],
    {
      encoding: 'utf8',
      timeout: 30_000,
    },
  )
  if (r.error || r.status !== 0)
    throw new Error(
      `${tool} failed (${r.error?.message ?? r.stderr}): install poppler-utils (node scripts/ensure-chromium.mjs)`,
    )
  return { dir, stdout: r.stdout }
}

const unescape = (s: string) =>
  s.replace(/&(amp|lt|gt|quot|apos|#\d+);/g, (_, e: string) =>
    e === 'amp'
      ? '&'
      : e === 'lt'
        ? '<'
        : e === 'gt'
          ? '>'
          : e === 'quot'
            ? '"'
            : e === 'apos'
              ? "'"
              : String.fromCodePoint(Number(e.slice(1))),
  )

/** One line of text as pdftotext finds it: its words joined by one space, its page and baseline box. */
export interface TextLine {
  page: number
  /** The bottom of the line's words (pdftotext's yMax, from the top of the page). */
  y: number
  text: string
}

/** The PDF's words by line (pdftotext -bbox: each word with its box), pages in order, top to bottom. */
export function textLines(pdf: Buffer): TextLine[] {
  const { dir, stdout } = poppler('pdftotext', ['-bbox', '-enc', 'UTF-8', '{in}', '-'], pdf)
  rmSync(dir, { recursive: true, force: true })
  const lines: TextLine[] = []
  let page = 0
  for (const m of stdout.matchAll(
    /<page |<word xMin="[\d.]+" yMin="[\d.]+" xMax="[\d.]+" yMax="([\d.]+)">([^<]*)<\/word>/g,
  )) {
    if (m[0] === '<page ') {
      page++
      continue
    }
    const y = Number(m[1])
    const last = lines.at(-1)
    if (last && last.page === page && Math.abs(last.y - y) < 1) last.text += ` ${unescape(m[2]!)}`
    else lines.push({ page, y, text: unescape(m[2]!) })
  }
  return lines
}

/** The pages of the PDF (pdfinfo). */
export function pageCount(pdf: Buffer): number {
  const { dir, stdout } = poppler('pdfinfo', ['{in}'], pdf)
  rmSync(dir, { recursive: true, force: true })
  return Number(/^Pages:\s+(\d+)/m.exec(stdout)![1])
}

/** The first file attached to the PDF, as pdfdetach saves it, and its name. */
export function attachment(pdf: Buffer): { name: string; bytes: Buffer } {
  const { dir, stdout } = poppler('pdfdetach', ['-list', '{in}'], pdf)
  const name = /^1: (.+)$/m.exec(stdout)?.[1]?.trim()
  rmSync(dir, { recursive: true, force: true })
  if (!name) throw new Error('the PDF has no attachment')
  const saved = poppler('pdfdetach', ['-save', '1', '-o', '{dir}/out', '{in}'], pdf)
  const bytes = readFileSync(path.join(saved.dir, 'out'))
  rmSync(saved.dir, { recursive: true, force: true })
  return { name, bytes }
}

/** Page `n` rendered to PNG by pdftoppm at `dpi`. */
export function pagePng(pdf: Buffer, n = 1, dpi = 40): Buffer {
  const { dir } = poppler(
    'pdftoppm',
    [
      '-png',
      '-gray',
      '-r',
      String(dpi),
      '-f',
      String(n),
      '-l',
      String(n),
      '-singlefile',
      '{in}',
      '{dir}/page',
    ],
    pdf,
  )
  const png = readFileSync(path.join(dir, 'page.png'))
  rmSync(dir, { recursive: true, force: true })
  return png
}

/**
 * The share of dark pixels (below mid grey) in each band of rows of an 8-bit grey or RGB PNG, as
 * pdftoppm writes it: the IDAT stream inflated and each row unfiltered (PNG filters 0-4, RFC 2083).
 */
export function inkByBand(png: Buffer, bands = 10): { width: number; height: number; ink: number[] } {
  if (!png.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])))
    throw new Error('not a PNG')
  let at = 8
  let width = 0
  let height = 0
  let bpp = 1
  const idat: Buffer[] = []
  while (at < png.length) {
    const len = png.readUInt32BE(at)
    const type = png.toString('latin1', at + 4, at + 8)
    const data = png.subarray(at + 8, at + 8 + len)
    if (type === 'IHDR') {
      width = data.readUInt32BE(0)
      height = data.readUInt32BE(4)
      if (data[8] !== 8 || (data[9] !== 0 && data[9] !== 2) || data[12] !== 0)
        throw new Error('expected an 8-bit grey or RGB PNG, not interlaced')
      bpp = data[9] === 2 ? 3 : 1
    } else if (type === 'IDAT') idat.push(data)
    at += 12 + len
  }
  const raw = inflateSync(Buffer.concat(idat))
  const stride = width * bpp
  let prev = Buffer.alloc(stride)
  let row = Buffer.alloc(stride)
  const dark = new Array<number>(bands).fill(0)
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)]!
    for (let i = 0; i < stride; i++) {
      const v = raw[y * (stride + 1) + 1 + i]!
      const a = i >= bpp ? row[i - bpp]! : 0
      const b = prev[i]!
      const c = i >= bpp ? prev[i - bpp]! : 0
      const p = a + b - c
      const pa = Math.abs(p - a)
      const pb = Math.abs(p - b)
      const pc = Math.abs(p - c)
      const paeth = pa <= pb && pa <= pc ? a : pb <= pc ? b : c
      row[i] = (v + [0, a, b, (a + b) >> 1, paeth][filter]!) & 0xff
    }
    for (let x = 0; x < width; x++) {
      let sum = 0
      for (let k = 0; k < bpp; k++) sum += row[x * bpp + k]!
      if (sum / bpp < 128) dark[Math.min(bands - 1, Math.floor((y * bands) / height))]!++
    }
    ;[prev, row] = [row, prev]
  }
  const perBand = (width * height) / bands
  return { width, height, ink: dark.map((d) => d / perBand) }
}
