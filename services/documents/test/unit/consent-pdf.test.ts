import { createHash } from 'node:crypto'
import {
  CONTINUED,
  MIN_SIZE,
  layout,
  renderConsentPdf,
  type ConsentRecord,
} from '../../src/render/consent-pdf'
import { attachment, inkByBand, pageCount, pagePng, textLines, type TextLine } from '../pdf-tools'

/**
 * The consent PDF read back by a third party (poppler's pdftotext, pdfinfo, pdfdetach, pdftoppm):
 * the text exactly as signed, paragraph by paragraph and character by character, in Spanish,
 * Catalan and Portuguese (ñ, á, ü, ç, «», €, ≥), its labels in the consent's language, the clinic
 * named, the time in the center's zone, and a page that renders with ink where the text is.
 */
const TEXTS = {
  es: [
    'Consentimiento informado para la cirugía de cataratas del ojo derecho de la paciente Begoña Muñoz.',
    '',
    'Se me ha explicado la intervención, sus riesgos y sus alternativas: la «endoftalmitis» aparece en ≥ 1 de cada 1.000 operaciones, y el pingüino de la lente intraocular no es más que un dibujo. El coste, 1.250 €, está acordado.',
    'Esta línea sigue al párrafo sin blanco entre medias; la cigüeña y el açúcar (del portugués) también.',
    '',
    '',
    'Autorizo la intervención.',
  ].join('\n'),
  ca: [
    'Consentiment informat per a la injecció intravítria de la pacient Núria Peña Sánchez.',
    '',
    "Entenc que el tractament pot causar molèsties; la col·laboració del pacient és necessària durant ≥ 3 dosis. L'anestèsia és «tòpica», la lingüística no hi té res a veure i el cost és de 90 € per sessió, però ço que compta és la visió.",
    '',
    'Autoritzo el tractament.',
  ].join('\n'),
  pt: [
    'Consentimento para a adaptação de lentes de contacto do menor João Muñoz.',
    '',
    'Fui informado de que as lentes devem ser usadas ≤ 8 horas por dia e nunca ≥ 12; a limpeza diária é «obrigatória», a consulta custa 45 € e a coração da questão é a saúde ocular. Até um pinguim, ou o alemão «Grüße», o sabe: ação, pão, não, açúcar, ñandu.',
    '',
    'Autorizo a adaptação.',
  ].join('\n'),
}

const sha = (s: string | Buffer) => createHash('sha256').update(s).digest('hex')

function record(language: string, body: string, o: Partial<ConsentRecord['evidence']> = {}): ConsentRecord {
  const id = '0190c5a0-0000-7000-8000-0000000000c1'
  const patient_id = '0190c5a0-0000-7000-8000-0000000000p1'.replace('p', 'a')
  return {
    consent: {
      id,
      patient_id,
      template_key: 'cataract-surgery',
      language,
      template_version: 2,
      text_sha256: sha(body),
      signer_role: 'guardian',
      status: 'pending',
      expires_at: '2026-12-04T10:00:00.000Z',
      evidence: null,
      document_id: null,
      withdrawn_at: null,
      withdrawal_reason: null,
      appointment_id: null,
      exam_id: null,
      codalmacen: 'ALM1',
      created_at: '2026-11-27T10:00:00.000Z',
      updated_at: '2026-11-27T10:00:00.000Z',
      version: 1,
    },
    template: {
      id: '0190c5a0-0000-7000-8000-0000000000d1',
      key: 'cataract-surgery',
      language,
      title: 'Cirugía de cataratas',
      body,
      version: 2,
      text_sha256: sha(body),
      codalmacen: null,
      created_at: '2026-11-01T10:00:00.000Z',
    },
    evidence: {
      signer_role: 'guardian',
      signer_name: 'Pepe Desconocido',
      signer_name_on_file: 'Marta García',
      signer_name_matches: false,
      signed_at: '2026-11-27T10:00:00.000Z',
      method: 'patient_link',
      ip: '203.0.113.7',
      user_agent: 'TestPhone/1.0',
      text_sha256: sha(body),
      answer: 'accept',
      ...o,
    },
    patientName: 'Begoña Muñoz',
    clinic: { name: 'Clínica Oftalmológica Ñandú', center: 'Centro Gràcia', timeZone: 'Europe/Madrid' },
  }
}

/**
 * The body of the consent as pdftotext reads it: the lines between the template line and the
 * evidence heading, with an empty line for each empty line slot (the body's lines are 14 points
 * apart: a gap of k slots holds k - 1 empty lines).
 */
function bodyLines(lines: TextLine[], templateLabel: string, evidenceLabel: string): string[] {
  const from = lines.findIndex((l) => l.text.startsWith(`${templateLabel} `)) + 1
  const to = lines.findIndex((l) => l.text === evidenceLabel)
  expect(from).toBeGreaterThan(0)
  expect(to).toBeGreaterThan(from)
  const out: string[] = []
  for (let i = from; i < to; i++) {
    const line = lines[i]!
    const prev = lines[i - 1]!
    if (i > from && prev.page === line.page)
      for (let k = Math.round((line.y - prev.y) / 14); k > 1; k--) out.push('')
    out.push(line.text)
  }
  return out
}

/**
 * Undoes the one thing the layout adds to these texts: line breaks inside a source line. The
 * renderer breaks a line at a run of spaces between words, the break standing for the whole run (it
 * splits a word, with a visible mark, only when even its smallest size is too wide: these texts
 * have no such word), and their words are one space apart, so here a break it introduced stands for
 * one space: a line is joined to the next with one space while that keeps it a prefix of the
 * template's line, and only then. So a lost paragraph or line break, an
 * extra one, a changed, lost or added character (a `?` for a `ñ`, two lines run together) still
 * fails the comparison, which is otherwise exact.
 */
function asSigned(visual: string[], template: string): string {
  const out: string[] = []
  let i = 0
  for (const source of template.split('\n')) {
    if (i >= visual.length) break
    let joined = visual[i++]!
    while (
      joined !== source &&
      i < visual.length &&
      visual[i] !== '' &&
      source.startsWith(`${joined} ${visual[i]}`)
    )
      joined += ` ${visual[i++]}`
    out.push(joined)
  }
  return [...out, ...visual.slice(i)].join('\n')
}

describe('the consent PDF, read back by poppler', () => {
  it.each([
    ['es', 'Plantilla', 'Constancia de la firma'],
    ['ca', 'Plantilla', 'Constància de la signatura'],
    ['pt', 'Modelo', 'Registo da assinatura'],
  ] as const)(
    '%s: the text exactly as signed, paragraphs kept, every character itself',
    async (lang, tpl, ev) => {
      const text = TEXTS[lang]
      for (const c of ['ñ', 'á', 'ü', 'ç', '«', '»', '€', '≥']) expect(text).toContain(c)
      const pdf = await renderConsentPdf(record(lang, text))
      const lines = textLines(pdf)
      const body = bodyLines(lines, tpl, ev)
      // The layout wrapped the long paragraphs (so the normalisation is exercised), and kept each line.
      expect(body.length).toBeGreaterThan(text.split('\n').length)
      expect(asSigned(body, text)).toBe(text)
      expect(lines.map((l) => l.text).join('\n')).not.toContain('?')
    },
  )

  it('names the clinic and center, the signer beside the name on file, the time in the center zone, and the text hash', async () => {
    const text = TEXTS.es
    const pdf = await renderConsentPdf(record('es', text))
    const all = textLines(pdf).map((l) => l.text)
    expect(all[0]).toBe('Clínica Oftalmológica Ñandú')
    expect(all[1]).toBe('Centro Gràcia')
    expect(all).toContain('Firmante: Pepe Desconocido (representante legal de Begoña Muñoz)')
    expect(all).toContain('Nombre en la ficha: Marta García (NO coincide con el nombre escrito)')
    expect(all).toContain('Respuesta: acepta')
    // 10:00 UTC is 11:00 in Madrid in November (CET).
    expect(all).toContain('Fecha y hora: 27 de noviembre de 2026 a las 11:00:00 CET (Europe/Madrid)')
    expect(all).toContain('UTC: 2026-11-27T10:00:00.000Z')
    // The hash is one word: too long to share a line with its label, it takes the next one.
    expect(all[all.indexOf(sha(text)) - 1]).toBe('SHA-256 del texto:')
    // The exact text rides along, byte for byte: its hash is the one printed.
    const file = attachment(pdf)
    expect(file.name).toBe('consent-text.txt')
    expect(file.bytes.toString('utf8')).toBe(text)
    expect(sha(file.bytes)).toBe(sha(text))
  })

  it('labels in English for a language it has no labels for; "the clinic" when no name was kept', async () => {
    const r = record('fr', 'Je consens.', { signer_name_on_file: null, signer_name_matches: null })
    const pdf = await renderConsentPdf({
      ...r,
      clinic: { name: null, center: null, timeZone: 'Europe/Madrid' },
    })
    const all = textLines(pdf).map((l) => l.text)
    expect(all[0]).toBe('The clinic')
    expect(all).toContain('Evidence of signature')
    expect(all).toContain('Name on file: none')
    expect(all).toContain('Je consens.')
  })

  it('renders a page to PNG with ink at the top (the clinic, the title) and in the text, margins white', async () => {
    const pdf = await renderConsentPdf(record('pt', TEXTS.pt))
    const png = pagePng(pdf)
    const { width, height, ink } = inkByBand(png)
    expect(width).toBeGreaterThan(300)
    expect(height).toBeGreaterThan(400)
    expect(ink[0]).toBeGreaterThan(0.002)
    expect(ink[1]).toBeGreaterThan(0.002)
    expect(Math.max(...ink)).toBeLessThan(0.3)
  })

  it('runs over to new pages, every line kept in order', async () => {
    const paragraphs = Array.from(
      { length: 90 },
      (_, i) => `Párrafo ${i + 1}: la visión «nítida» cuesta ≥ ${i} €, niño, pingüino, açaí.`,
    )
    const text = paragraphs.join('\n')
    const pdf = await renderConsentPdf(record('es', text))
    expect(pageCount(pdf)).toBeGreaterThanOrEqual(2)
    const all = textLines(pdf).map((l) => l.text)
    const found = all.filter((l) => l.startsWith('Párrafo '))
    expect(found).toEqual(paragraphs)
    // Every page names its consent.
    expect(all.filter((l) => l === 'Consentimiento 0190c5a0-0000-7000-8000-0000000000c1')).toHaveLength(
      pageCount(pdf),
    )
  })

  it('never cuts a long word silently: smaller on its own line, or split with a visible mark', async () => {
    const long = 'Supercalifragilísticoespialidoso'.repeat(3)
    const huge = 'x'.repeat(400)
    const text = `Antes ${long} después.\n${huge}`
    const pdf = await renderConsentPdf(record('es', text))
    const body = bodyLines(textLines(pdf), 'Plantilla', 'Constancia de la firma')
    expect(body.slice(0, 3)).toEqual(['Antes', long, 'después.'])
    const pieces = body.slice(3)
    expect(pieces.length).toBeGreaterThan(1)
    for (const p of pieces.slice(0, -1)) expect(p.endsWith(CONTINUED)).toBe(true)
    expect(pieces.map((p) => p.replace(new RegExp(`${CONTINUED}$`), '')).join('')).toBe(huge)
  })
})

describe('layout', () => {
  // Each character one unit wide at any size: a line of `width` characters.
  const mono = { widthOfTextAtSize: (s: string, size: number) => ([...s].length * size) / 10 }
  const lay = (text: string, width = 10) => layout(mono, text, width, 10)

  it('keeps source lines and empty lines, and repeated spaces inside a line as signed', () => {
    expect(lay('a  b\n\nc').map((l) => l.text)).toEqual(['a  b', '', 'c'])
    expect(lay('   sangría').map((l) => l.text)).toEqual(['   sangría'])
    expect(lay('').map((l) => l.text)).toEqual([''])
  })

  it('wraps only at spaces; the break takes the space run it replaces', () => {
    expect(lay('uno dos tres cuatro').map((l) => l.text)).toEqual(['uno dos', 'tres', 'cuatro'])
    expect(lay('uno dos    tres').map((l) => l.text)).toEqual(['uno dos', 'tres'])
  })

  it('shrinks a word wider than a line onto a line of its own, then splits it with the mark', () => {
    expect(lay('ab abcdefghijkl cd')).toEqual([
      { text: 'ab', size: 10 },
      { text: 'abcdefghijkl', size: 8.25 },
      { text: 'cd', size: 10 },
    ])
    const split = lay('x'.repeat(40))
    expect(split.every((l) => l.size === MIN_SIZE)).toBe(true)
    expect(
      split
        .map((l) => l.text)
        .join('')
        .replaceAll(CONTINUED, ''),
    ).toBe('x'.repeat(40))
    expect(split.slice(0, -1).every((l) => l.text.endsWith(CONTINUED))).toBe(true)
  })

  it('draws a tab as four spaces', () => {
    expect(lay('a\tb', 20).map((l) => l.text)).toEqual(['a    b'])
  })
})
