// The text of a PDF as a reader extracts it, with Mozilla's pdf.js (pdfjs-dist): the PDF's bytes on
// stdin, its text on stdout, each text item on a line. A script of its own because pdf.js is an ES
// module, which the tests (compiled to CommonJS) cannot load in process.
import { getDocument } from 'pdfjs-dist/legacy/build/pdf.mjs'

const chunks = []
for await (const chunk of process.stdin) chunks.push(chunk)
const pdf = await getDocument({ data: new Uint8Array(Buffer.concat(chunks)), verbosity: 0 }).promise
const lines = []
for (let n = 1; n <= pdf.numPages; n++) {
  const content = await (await pdf.getPage(n)).getTextContent()
  for (const item of content.items) if ('str' in item && item.str) lines.push(item.str)
}
process.stdout.write(lines.join('\n'))
