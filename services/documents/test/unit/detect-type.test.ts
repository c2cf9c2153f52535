import { fileTypeMagic } from '../../src/adapters/file-type'
import { ACCEPTED, SNIFF_BYTES, detectType as detect } from '../../src/domain/detect-type'

const detectType = (head: Buffer) => detect(head, fileTypeMagic)
import { dicom, pdf, png } from '../helpers'

/** The type from the bytes (DESIGN.md section 15), never the client's name or Content-Type. */

const bytes = (...parts: Array<string | number[] | Buffer>) =>
  Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'latin1') : Buffer.from(p))))
/** An ISO BMFF file's head: its ftyp box with a major brand and compatible ones (HEIC, HEIF, AVIF). */
function ftyp(brand: string, compatible: string[] = []) {
  const box = Buffer.alloc(16 + 4 * compatible.length)
  box.writeUInt32BE(box.length, 0)
  box.write('ftyp', 4, 'latin1')
  box.write(brand, 8, 'latin1')
  compatible.forEach((c, i) => box.write(c, 16 + 4 * i, 'latin1'))
  return Buffer.concat([box, Buffer.alloc(64)])
}
const BOM = [0xef, 0xbb, 0xbf]

describe('detectType: accepted types', () => {
  it.each([
    ['PDF', pdf(), 'application/pdf'],
    ['JPEG', bytes([0xff, 0xd8, 0xff, 0xe0, 0, 0x10], 'JFIF', [0, 1, 1, 0, 0, 1, 0, 1, 0, 0]), 'image/jpeg'],
    ['PNG', png(), 'image/png'],
    ['TIFF, little-endian', bytes('II*', [0, 8, 0, 0, 0], Buffer.alloc(64)), 'image/tiff'],
    ['TIFF, big-endian', bytes('MM', [0, 0x2a, 0, 0, 0, 8], Buffer.alloc(64)), 'image/tiff'],
    ['WebP', bytes('RIFF', [0x24, 0, 0, 0], 'WEBPVP8 ', Buffer.alloc(64)), 'image/webp'],
    ['HEIC', ftyp('heic', ['mif1', 'heic']), 'image/heic'],
    ['HEIC (heix)', ftyp('heix'), 'image/heic'],
    ['HEIF', ftyp('mif1', ['heic']), 'image/heif'],
    ['DICOM', dicom(), 'application/dicom'],
  ])('%s', async (_, head, contentType) => {
    expect(await detectType(head)).toEqual({ accepted: true, contentType })
    expect(ACCEPTED[contentType]).toBeDefined()
  })

  it('is DICOM whatever the preamble holds: HTML before DICM at byte 128 is stored as DICOM', async () => {
    const html = Buffer.alloc(128, 0x20)
    html.write('<html><script>alert(1)</script></html>')
    expect(await detectType(Buffer.concat([html, Buffer.from('DICM')]))).toEqual({
      accepted: true,
      contentType: 'application/dicom',
    })
  })

  it('a polyglot is what its first bytes are: a PDF carrying HTML is a PDF (served as one, sandboxed)', async () => {
    expect(await detectType(bytes('%PDF-1.4\n<html><script>alert(1)</script></html>'))).toEqual({
      accepted: true,
      contentType: 'application/pdf',
    })
    expect(await detectType(bytes('<html>%PDF-1.4</html>'))).toEqual({ accepted: false, found: 'text/html' })
  })

  it('needs the whole DICM at 128: not at 127, nor a file cut short of byte 132', async () => {
    const at127 = Buffer.concat([Buffer.alloc(127), Buffer.from('DICM'), Buffer.alloc(8)])
    expect((await detectType(at127)).accepted).toBe(false)
    expect((await detectType(Buffer.concat([Buffer.alloc(128), Buffer.from('DIC')]))).accepted).toBe(false)
    expect(await detectType(Buffer.concat([Buffer.alloc(128), Buffer.from('DICM')]))).toEqual({
      accepted: true,
      contentType: 'application/dicom',
    })
  })

  it('reads far enough for DICOM and for file-type', () => {
    expect(SNIFF_BYTES).toBeGreaterThanOrEqual(4100)
  })
})

describe('detectType: refused types, named by what the bytes are', () => {
  it.each([
    ['an empty file', Buffer.alloc(0), 'an empty file'],
    ['GIF', bytes('GIF89a', [1, 0, 1, 0]), 'image/gif'],
    ['ZIP', bytes('PK', [3, 4], Buffer.alloc(60)), 'application/zip'],
    ['a Windows program', bytes('MZ', Buffer.alloc(100)), 'application/x-msdownload'],
    ['AVIF', ftyp('avif'), 'image/avif'],
    ['a HEIF sequence', ftyp('msf1'), 'image/heif-sequence'],
    ['SVG', bytes('<svg xmlns="http://www.w3.org/2000/svg"><script/></svg>'), 'image/svg+xml'],
    ['SVG after blank lines', bytes('\n\n  <SVG xmlns="http://www.w3.org/2000/svg"/>'), 'image/svg+xml'],
    ['SVG after a UTF-8 BOM', bytes(BOM, '<svg xmlns="http://www.w3.org/2000/svg"/>'), 'image/svg+xml'],
    ['XML', bytes('<?xml version="1.0"?><informe/>'), 'application/xml'],
    ['XML after a blank line', bytes('\n<?xml version="1.0"?><informe/>'), 'application/xml'],
    ['HTML', bytes('<!DOCTYPE html><html><body>x</body></html>'), 'text/html'],
    ['plain text', bytes('Informe de alta.\r\n\tSin incidencias.\n'), 'text/plain'],
    ['text in UTF-8', Buffer.from('Niño, cigüeña, «açúcar», 90 €', 'utf8'), 'text/plain'],
    [
      'bytes nobody recognises',
      Buffer.from([0, 1, 2, 3, 4, 5, 6, 7, 0, 0, 0, 9]),
      'unrecognised binary data',
    ],
  ])('%s', async (_, head, found) => {
    expect(await detectType(head)).toEqual({ accepted: false, found })
  })

  it.each([
    [
      'an XML declaration',
      '<?xml version="1.0" encoding="UTF-8"?>\n<svg xmlns="http://www.w3.org/2000/svg"/>',
    ],
    [
      'a declaration and a comment',
      '<?xml version="1.0"?><!-- dibujo --><svg><script>alert(1)</script></svg>',
    ],
    ['a doctype', '<?xml version="1.0"?><!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "x"><svg/>'],
  ])('SVG behind %s is SVG, not merely XML', async (_, text) => {
    expect(await detectType(bytes(text))).toEqual({ accepted: false, found: 'image/svg+xml' })
    expect(await detectType(bytes(BOM, text))).toEqual({ accepted: false, found: 'image/svg+xml' })
  })

  it('XHTML behind an XML declaration is HTML', async () => {
    const xhtml = '<?xml version="1.0"?><!DOCTYPE html><html xmlns="http://www.w3.org/1999/xhtml"/>'
    expect(await detectType(bytes(xhtml))).toEqual({ accepted: false, found: 'text/html' })
  })

  it('XML that is not text it can read stays XML (UTF-16)', async () => {
    const utf16 = Buffer.from('\ufeff<?xml version="1.0"?><svg/>', 'utf16le')
    expect(await detectType(utf16)).toEqual({ accepted: false, found: 'application/xml' })
  })

  it.each([
    ['<!doctype html>'],
    ['<html lang="es">'],
    ['<HEAD><title>x</title>'],
    ['<body onload="x()">'],
    ['<script>alert(1)</script>'],
    ['<iframe src="https://example.invalid">'],
    ['<div>x</div>'],
    ['<p>x</p>'],
    ['<p\n>x'],
    ['<a href="x">y</a>'],
    ['   \n<html>'],
    ['Informe <html> dentro'],
  ])('%j is HTML', async (text) => {
    expect(await detectType(bytes(text))).toEqual({ accepted: false, found: 'text/html' })
  })

  it.each([['<pre>x</pre>'], ['<abbr>x</abbr>'], ['<table>'], ['<?php echo 1; ?>']])(
    '%j is other text',
    async (text) => expect(await detectType(bytes(text))).toEqual({ accepted: false, found: 'text/plain' }),
  )

  it('looks for markup in the first 512 characters only', async () => {
    expect(await detectType(bytes('x'.repeat(507), '<html'))).toEqual({ accepted: false, found: 'text/html' })
    expect(await detectType(bytes('x'.repeat(508), '<html>'))).toEqual({
      accepted: false,
      found: 'text/plain',
    })
    const late = bytes('<?xml version="1.0"?>', ' '.repeat(600), '<svg/>')
    expect(await detectType(late)).toEqual({ accepted: false, found: 'application/xml' })
  })

  it('plain text is more than 95% printable (tab, CR, LF, ASCII from space, any byte from 128) in the first 512 bytes', async () => {
    const of = (printable: number, other: number[]) =>
      detectType(Buffer.concat([Buffer.alloc(printable, 0x61), Buffer.from(other)]))
    // 96 of 100 printable: text; 95 of 100: not.
    expect(await of(96, [0, 1, 2, 3])).toEqual({ accepted: false, found: 'text/plain' })
    expect(await of(95, [0, 1, 2, 3, 4])).toEqual({ accepted: false, found: 'unrecognised binary data' })
    // Each kind of printable byte counts; DEL (127) and unit separator (31) do not.
    for (const b of [9, 10, 13, 32, 126, 128, 255])
      expect([b, await of(19, Array(20).fill(b))]).toEqual([b, { accepted: false, found: 'text/plain' }])
    for (const b of [0, 8, 11, 31, 127])
      expect([b, await of(19, Array(20).fill(b))]).toEqual([
        b,
        { accepted: false, found: 'unrecognised binary data' },
      ])
    // Past the first 512 bytes, nothing counts.
    expect(await of(512, Array(200).fill(0))).toEqual({ accepted: false, found: 'text/plain' })
  })
})
