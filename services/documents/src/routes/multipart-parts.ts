import { Busboy, type BusboyHeaders, type BusboyInstance } from '@fastify/busboy'
import type { IncomingHttpHeaders } from 'node:http'
import type { Readable } from 'node:stream'
import { AppError } from '@clinic/platform/core'
import { MalformedUpload } from '../domain/errors'
import type { UploadPart } from '../domain/multipart'

/** What an upload may carry besides its one file: a few short fields, in few parts. */
const LIMITS = {
  fields: 10,
  fieldSize: 1024,
  fieldNameSize: 100,
  files: 1,
  parts: 12,
  headerPairs: 8,
  headerSize: 8 * 1024,
}

type Item = UploadPart | Error | null

/**
 * A multipart/form-data body as the parts it holds, read as it arrives (@fastify/busboy): a field
 * whole, a file as a stream of its bytes that must be read before the next part comes (busboy
 * waits for it: nothing piles up). Anything malformed (no boundary, a truncated body, a part
 * header too long, too many parts) is a 400. When the reader stops early (a refused upload), the
 * rest of the body is read and dropped, so the connection stays usable and nothing is kept.
 */
export async function* multipartParts(
  headers: IncomingHttpHeaders,
  body: Readable,
  maxFileBytes: number,
): AsyncGenerator<UploadPart> {
  let parser: BusboyInstance
  try {
    parser = new Busboy({
      headers: headers as BusboyHeaders,
      limits: { ...LIMITS, fileSize: maxFileBytes + 1 },
    })
  } catch (err) {
    body.resume()
    throw new MalformedUpload(`not a multipart body: ${(err as Error).message}`)
  }
  const queue: Item[] = []
  let wake: (() => void) | undefined
  const push = (item: Item) => {
    queue.push(item)
    wake?.()
    wake = undefined
  }
  let failure: Error | undefined
  const fail = (err: Error) => {
    failure ??=
      err instanceof AppError ? err : new MalformedUpload(`the multipart body is malformed: ${err.message}`)
    push(failure)
  }
  parser.on('field', (name: string, value: string, nameTruncated: boolean, valueTruncated: boolean) => {
    if (nameTruncated || valueTruncated)
      fail(new MalformedUpload(`the field "${name.slice(0, 100)}" is too long`))
    else push({ kind: 'field', name, value })
  })
  parser.on('file', (name: string, stream: Readable, filename: string | undefined) => {
    parser.once('error', (err: Error) => stream.destroy(err))
    // Its errors reach the reader through `failure` too, also once it has stopped reading.
    stream.on('error', () => undefined)
    push({ kind: 'file', name, filename: filename || undefined, bytes: fileBytes(stream, () => failure) })
  })
  parser.on('finish', () => push(null))
  parser.on('error', fail)
  parser.on('partsLimit', () => fail(new MalformedUpload('too many parts')))
  parser.on('filesLimit', () => fail(new MalformedUpload('one file per upload')))
  parser.on('fieldsLimit', () => fail(new MalformedUpload('too many fields')))
  body.on('error', fail)
  // An aborted request ends without busboy's finish: its parts are incomplete.
  body.on('close', () => {
    if (!body.readableEnded) fail(new MalformedUpload('the body ended early'))
  })
  body.pipe(parser)
  try {
    for (;;) {
      while (!queue.length) await new Promise<void>((resolve) => (wake = resolve))
      const item = queue.shift()!
      if (item === null) return
      if (item instanceof Error) throw item
      yield item
    }
  } finally {
    // Stopped early, or done: whatever is left of the body is read and dropped.
    body.unpipe(parser)
    body.resume()
  }
}

/** A file part's bytes; an error of the whole body (truncated, malformed) ends it with that error. */
async function* fileBytes(stream: Readable, failure: () => Error | undefined): AsyncGenerator<Buffer> {
  try {
    for await (const chunk of stream) yield chunk as Buffer
  } catch (err) {
    throw failure() ?? new MalformedUpload(`the file part is malformed: ${(err as Error).message}`)
  }
  const f = failure()
  if (f) throw f
}
