import { cleanFilename, contentDisposition, downloadName } from '../../src/domain/filename'

describe('downloadName: the extension of the type the bytes show, always', () => {
  it.each([
    ['poly.html', 'dcm', 'poly.dcm'],
    ['fondo.pdf', 'png', 'fondo.png'],
    ['oct', 'dcm', 'oct.dcm'],
    ['informe 12.5', 'pdf', 'informe 12.5.pdf'],
    ['scan.tar.gz', 'pdf', 'scan.tar.pdf'],
    ['FOTO.JPEG', 'jpg', 'FOTO.JPEG'],
    ['foto.jpe', 'jpg', 'foto.jpe'],
    ['corte.TIFF', 'tif', 'corte.TIFF'],
    ['x.heif', 'heic', 'x.heif'],
    ['serie.dicom', 'dcm', 'serie.dicom'],
    ['a.webp', 'webp', 'a.webp'],
    ['.pdf', 'png', '.pdf.png'],
    ['informe.pdf.exe', 'pdf', 'informe.pdf.pdf'],
    // The own extension in any case, each type's usual spelling too.
    ['FOTO.JPG', 'jpg', 'FOTO.JPG'],
    ['CORTE.TIF', 'tif', 'CORTE.TIF'],
    ['IMG_1.HEIC', 'heic', 'IMG_1.HEIC'],
    ['SERIE.DCM', 'dcm', 'SERIE.DCM'],
    ['ESCANEO.PNG', 'png', 'ESCANEO.PNG'],
    ['a.WEBP', 'webp', 'a.WEBP'],
    ['informe.Pdf', 'pdf', 'informe.Pdf'],
    // What reads as an extension: a letter, then up to 7 letters or digits.
    ['informe.abcdefgh', 'pdf', 'informe.pdf'],
    ['informe.abcdefghi', 'pdf', 'informe.abcdefghi.pdf'],
    ['informe.mp4', 'pdf', 'informe.pdf'],
    ['informe.4mp', 'pdf', 'informe.4mp.pdf'],
    ['informe.', 'pdf', 'informe..pdf'],
  ])('%s as %s -> %s', (name, ext, expected) => expect(downloadName(name, ext)).toBe(expected))
})

describe('cleanFilename', () => {
  it('keeps the last path segment, without control or bidi characters', () => {
    expect(cleanFilename('C:\\scans\\vol\u0007ante.pdf', 'pdf')).toBe('volante.pdf')
    expect(cleanFilename('../../etc/passwd', 'pdf')).toBe('passwd')
    expect(cleanFilename('evil\u202egnp.exe', 'png')).toBe('evilgnp.exe')
  })
  it('takes out every bidirectional control (Unicode Bidi_Control), which would show the name reversed', () => {
    // LRM, RLM, the embeddings and overrides (LRE RLE PDF LRO RLO), the isolates, and the Arabic letter mark.
    for (const c of ['\u200e', '\u200f', '\u202a', '\u202b', '\u202c', '\u202d', '\u202e'])
      expect([c, cleanFilename(`informe${c}fdp.exe`, 'pdf')]).toEqual([c, 'informefdp.exe'])
    for (const c of ['\u2066', '\u2067', '\u2068', '\u2069', '\u061c'])
      expect([c, cleanFilename(`informe${c}fdp.exe`, 'pdf')]).toEqual([c, 'informefdp.exe'])
  })
  it('takes out C0 and C1 controls, DEL and the line and paragraph separators; keeps other text as it is', () => {
    expect(cleanFilename('a\u0000b\u001fc\u007fd\u0080e\u0085f\u009fg\u2028h\u2029i.pdf', 'pdf')).toBe(
      'abcdefghi.pdf',
    )
    expect(cleanFilename('línea\r\n2\t.pdf', 'pdf')).toBe('línea2.pdf')
    expect(cleanFilename('Año 2026 «fondo» €.jpg', 'jpg')).toBe('Año 2026 «fondo» €.jpg')
    expect(cleanFilename('  espacios  .pdf  ', 'pdf')).toBe('espacios  .pdf')
  })
  it('keeps only the last segment of a Windows or POSIX path, never a parent or current directory', () => {
    expect(cleanFilename('..\\..\\windows\\win.ini', 'pdf')).toBe('win.ini')
    expect(cleanFilename('/var/tmp/../x.png', 'png')).toBe('x.png')
    expect(cleanFilename('a/b/..', 'png')).toBe('upload.png')
    expect(cleanFilename('..\u202e', 'png')).toBe('upload.png')
    expect(cleanFilename('.\u0000.', 'png')).toBe('upload.png')
    expect(cleanFilename(' .. ', 'png')).toBe('upload.png')
    expect(cleanFilename('...', 'png')).toBe('...')
    expect(cleanFilename('.bashrc', 'png')).toBe('.bashrc')
  })
  it('names it upload.<ext> when nothing is left', () => {
    for (const raw of [undefined, '', '..', '.', 'dir/', '\u200e\u200f'])
      expect(cleanFilename(raw, 'pdf')).toBe('upload.pdf')
  })
  it('cuts a name at 255 characters, never inside a character', () => {
    const name = cleanFilename(`${'ñ'.repeat(300)}.pdf`, 'pdf')
    expect([...name]).toHaveLength(255)
    expect(name).toBe('ñ'.repeat(255))
    expect(cleanFilename('😀'.repeat(256), 'pdf')).toBe('😀'.repeat(255))
    expect(cleanFilename('x'.repeat(255), 'pdf')).toBe('x'.repeat(255))
  })
})

describe('contentDisposition', () => {
  it("replaces in the ASCII fallback what is not printable ASCII, quotes, backslashes, % and ;; encodes ' ( ) * too", () => {
    expect(contentDisposition("a\\b\u0001c~d'(x)*.pdf")).toBe(
      `attachment; filename="a_b_c~d'(x)*.pdf"; filename*=UTF-8''a%5Cb%01c~d%27%28x%29%2A.pdf`,
    )
    expect(contentDisposition(' ok.pdf')).toBe(`attachment; filename=" ok.pdf"; filename*=UTF-8''%20ok.pdf`)
  })
  it('is an attachment with an ASCII fallback and the UTF-8 name', () => {
    expect(contentDisposition('informe "ñ";%.pdf')).toBe(
      `attachment; filename="informe _____.pdf"; filename*=UTF-8''informe%20%22%C3%B1%22%3B%25.pdf`,
    )
  })
})
