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
  ])('%s as %s -> %s', (name, ext, expected) => expect(downloadName(name, ext)).toBe(expected))
})

describe('cleanFilename', () => {
  it('keeps the last path segment, without control or bidi characters', () => {
    expect(cleanFilename('C:\\scans\\vol\u0007ante.pdf', 'pdf')).toBe('volante.pdf')
    expect(cleanFilename('../../etc/passwd', 'pdf')).toBe('passwd')
    expect(cleanFilename('evil\u202egnp.exe', 'png')).toBe('evilgnp.exe')
  })
  it('names it upload.<ext> when nothing is left', () => {
    for (const raw of [undefined, '', '..', '.', 'dir/', '\u200e\u200f'])
      expect(cleanFilename(raw, 'pdf')).toBe('upload.pdf')
  })
  it('cuts a name at 255 characters, never inside a character', () => {
    const name = cleanFilename(`${'ñ'.repeat(300)}.pdf`, 'pdf')
    expect([...name]).toHaveLength(255)
  })
})

describe('contentDisposition', () => {
  it('is an attachment with an ASCII fallback and the UTF-8 name', () => {
    expect(contentDisposition('informe "ñ";%.pdf')).toBe(
      `attachment; filename="informe _____.pdf"; filename*=UTF-8''informe%20%22%C3%B1%22%3B%25.pdf`,
    )
  })
})
