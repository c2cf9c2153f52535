import { CONTINUED, MIN_SIZE, layout, renderConsentPdf, type Line } from '../../src/render/consent-pdf'
import { pageCount, textLines } from '../pdf-tools'

/**
 * The consent PDF's layout (DESIGN.md section 16: the text exactly as the signer saw it, paragraph
 * by paragraph and character by character). The page shows the text with `white-space: pre-wrap`,
 * so spaces are text: a run of them is drawn as it is, never collapsed; a line wraps at a space run
 * (the break stands for it); a word wider than a line gets one of its own, smaller, and is split
 * (each piece but the last marked with CONTINUED) only when even MIN_SIZE is too wide.
 */

// Each character one unit wide per 10 points of size: at size 10, a line of `width` characters.
const mono = { widthOfTextAtSize: (s: string, size: number) => ([...s].length * size) / 10 }
const lay = (text: string, width = 10) => layout(mono, text, width, 10)
const texts = (lines: Line[]) => lines.map((l) => l.text)

describe('layout: spaces are text', () => {
  it('a run of spaces inside a line is drawn as it is, never collapsed', () => {
    expect(texts(lay('a   b  c'))).toEqual(['a   b  c'])
    expect(texts(lay('a          b', 20))).toEqual(['a          b'])
  })

  it('the break replaces the whole run of spaces it falls on, and only that run', () => {
    expect(texts(lay('abcde     fghij'))).toEqual(['abcde', 'fghij'])
    expect(texts(lay('abc  defgh  ij'))).toEqual(['abc  defgh', 'ij'])
    expect(texts(lay('a b c d e f g h i j k'))).toEqual(['a b c d e', 'f g h i j', 'k'])
  })

  it('leading spaces are drawn when the first word fits after them; else the word starts the line', () => {
    expect(texts(lay('   abc'))).toEqual(['   abc'])
    expect(texts(lay('    abcdef'))).toEqual(['    abcdef'])
    expect(texts(lay('      abcdefgh'))).toEqual(['abcdefgh'])
    expect(texts(lay('   abcdefghijklmno x'))).toEqual(['abcdefghijklmno', 'x'])
  })

  it('trailing spaces are drawn (the text as signed), and a line of spaces alone', () => {
    expect(texts(lay('ab   '))).toEqual(['ab   '])
    expect(texts(lay('abcdefghij   '))).toEqual(['abcdefghij   '])
    expect(texts(lay('   '))).toEqual(['   '])
    expect(texts(lay('a\n \nb'))).toEqual(['a', ' ', 'b'])
  })

  it('a tab is four spaces', () => {
    expect(texts(lay('a\tb', 20))).toEqual(['a    b'])
    expect(texts(lay('ab\t\tcd'))).toEqual(['ab', 'cd'])
  })
})

describe('layout: lines and paragraphs as signed', () => {
  it.each([
    ['\\n', 'a\nb'],
    ['\\r\\n', 'a\r\nb'],
    ['\\r', 'a\rb'],
    ['U+2028', 'a\u2028b'],
    ['U+2029', 'a\u2029b'],
  ])('%s starts a new line', (_, text) => expect(texts(lay(text))).toEqual(['a', 'b']))

  it('an empty line is an empty line, however many', () => {
    expect(texts(lay('a\r\n\r\nb'))).toEqual(['a', '', 'b'])
    expect(texts(lay('a\n\n\nb\n'))).toEqual(['a', '', '', 'b', ''])
    expect(texts(lay(''))).toEqual([''])
  })

  it('every line at the size asked for, but a word that does not fit', () => {
    expect(lay('uno dos tres').every((l) => l.size === 10)).toBe(true)
    expect(layout(mono, 'uno dos tres', 100, 14)).toEqual([{ text: 'uno dos tres', size: 14 }])
  })
})

describe('layout: a word wider than a line', () => {
  it('gets a line of its own, drawn smaller (to a quarter point) so it fits whole', () => {
    expect(lay('ab abcdefghijkl cd')).toEqual([
      { text: 'ab', size: 10 },
      { text: 'abcdefghijkl', size: 8.25 },
      { text: 'cd', size: 10 },
    ])
    expect(lay('abcdefghijklm   x')).toEqual([
      { text: 'abcdefghijklm', size: 7.5 },
      { text: 'x', size: 10 },
    ])
    // 16 characters fit at 6.25 points; at MIN_SIZE they would too.
    expect(lay('x'.repeat(16))).toEqual([{ text: 'x'.repeat(16), size: 6.25 }])
    expect(MIN_SIZE).toBe(6)
  })

  it('is split only when even MIN_SIZE is too wide: each piece but the last ends with the mark', () => {
    expect(lay('x'.repeat(17))).toEqual([
      { text: `${'x'.repeat(15)}${CONTINUED}`, size: MIN_SIZE },
      { text: 'xx', size: MIN_SIZE },
    ])
    const pieces = lay(`a ${'y'.repeat(40)} b`)
    expect(pieces.map((l) => [l.text.length, l.size])).toEqual([
      [1, 10],
      [16, MIN_SIZE],
      [16, MIN_SIZE],
      [10, MIN_SIZE],
      [1, 10],
    ])
    expect(CONTINUED).toBe('↵')
  })

  it('never splits a character: a piece holds at least one, whatever the width', () => {
    expect(layout(mono, 'ñü', 0.1, 10)).toEqual([
      { text: `ñ${CONTINUED}`, size: MIN_SIZE },
      { text: 'ü', size: MIN_SIZE },
    ])
    expect(texts(lay('😀'.repeat(20)))).toEqual([`${'😀'.repeat(15)}${CONTINUED}`, '😀'.repeat(5)])
  })
})

describe('layout: nothing lost, nothing added but the marks', () => {
  /** A small deterministic generator of texts: words of any length, runs of spaces, tabs, breaks. */
  function* samples(n: number) {
    let seed = 7
    const next = (m: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % m
    for (let i = 0; i < n; i++) {
      let s = ''
      for (let k = next(40); k > 0; k--)
        s += ['ñ'.repeat(1 + next(25)), ' '.repeat(1 + next(4)), '\t', '\n', 'ab'][next(5)]
      yield s
    }
  }
  it('the characters other than spaces are all there, in order, and each line fits', () => {
    for (const text of samples(300)) {
      const lines = lay(text, 12)
      const drawn = lines.map((l) => l.text.replace(new RegExp(`${CONTINUED}$`), '')).join('')
      expect([text, drawn.replace(/\s/g, '')]).toEqual([text, text.replace(/\s/g, '')])
      for (const l of lines)
        if (l.text.trim())
          expect([text, l, mono.widthOfTextAtSize(l.text.trimEnd(), l.size) <= 12]).toEqual([text, l, true])
      expect(lines.length).toBeGreaterThanOrEqual(text.split('\n').length)
    }
  })
})

describe('the PDF runs over pages', () => {
  const A4_HEIGHT = 841.89
  const MARGIN = 56
  const consent = (body: string) =>
    renderConsentPdf({
      consent: { id: '0190c5a0-0000-7000-8000-0000000000c1', patient_id: 'p', language: 'es' } as never,
      template: { key: 'k', language: 'es', title: 'Título', body, version: 1 } as never,
      evidence: {
        signer_role: 'patient',
        signer_name: 'Begoña Muñoz',
        signed_at: '2026-11-27T10:00:00.000Z',
        method: 'in_person',
        ip: null,
        user_agent: null,
        text_sha256: 'a'.repeat(64),
        answer: 'accept',
      },
      patientName: 'Begoña Muñoz',
      clinic: { name: 'Clínica', center: null, timeZone: 'Europe/Madrid' },
    })

  it('within the margins on every page, each page full before the next, the footer on each', async () => {
    const body = Array.from({ length: 150 }, (_, i) => `Línea ${i + 1}`).join('\n')
    const pdf = await consent(body)
    const pages = pageCount(pdf)
    expect(pages).toBe(4)
    const lines = textLines(pdf)
    const footer = 'Consentimiento 0190c5a0-0000-7000-8000-0000000000c1'
    for (let page = 1; page <= pages; page++) {
      const on = lines.filter((l) => l.page === page)
      expect(on.filter((l) => l.text === footer).map((l) => Math.round(A4_HEIGHT - l.y))).toEqual([
        expect.any(Number),
      ])
      const text = on.filter((l) => l.text !== footer)
      // Baselines between the margins (pdftotext's yMax is the bottom of the descent, below the baseline).
      for (const l of text) expect(l.y).toBeLessThanOrEqual(A4_HEIGHT - MARGIN + 4)
      expect(text[0]!.y).toBeLessThanOrEqual(MARGIN + 4)
      // Full: the next line would have gone below the bottom margin.
      if (page < pages) expect(text.at(-1)!.y).toBeGreaterThan(A4_HEIGHT - MARGIN - 14)
    }
    expect(lines.filter((l) => l.text.startsWith('Línea ')).map((l) => l.text)).toEqual(body.split('\n'))
  })
})
