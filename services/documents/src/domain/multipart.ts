/**
 * An upload as the use case reads it: its parts in the order they arrived, a file part's bytes as
 * a stream it must read before the next part comes (the route parses the multipart body as it
 * streams; domain code never sees HTTP).
 */
export type UploadPart =
  | { kind: 'field'; name: string; value: string }
  | { kind: 'file'; name: string; filename: string | undefined; bytes: AsyncIterable<Buffer> }
