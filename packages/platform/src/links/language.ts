import Negotiator from 'negotiator'

/**
 * The language of a page for people (a patient link, a consent link, an unsubscribe page), chosen by
 * one rule everywhere:
 *
 * 1. the link's own language (the `lang` its token carries: the patient's, or the message's), when
 *    the page has it;
 * 2. else the browser's: Accept-Language's tags from the highest q-value down and, at equal q, in the
 *    header's order; the first that names a language of the page wins. A tag names a language by its
 *    primary subtag (`en-GB` is `en`), `*` names each of the page's languages in the page's order,
 *    and `q=0` refuses a language (`en;q=0` is never chosen through `en-GB` or `*`);
 * 3. else the page's first language (its default).
 *
 * Accept-Language is read by `negotiator` (the parser Express and Fastify use): q-values, their
 * order, and what a tag accepts.
 */
export function pageLanguage<L extends string>(
  languages: readonly [L, ...L[]],
  o: { link?: string; acceptLanguage?: string },
): L {
  const own = o.link === undefined ? undefined : languageOf(o.link, languages)
  if (own) return own
  if (o.acceptLanguage) {
    const negotiator = new Negotiator({ headers: { 'accept-language': o.acceptLanguage } })
    const accepted = (l: L) => negotiator.languages([l]).length > 0
    for (const tag of negotiator.languages()) {
      const named = tag === '*' ? languages : [languageOf(tag, languages)]
      const found = named.find((l): l is L => l !== undefined && accepted(l))
      if (found) return found
    }
  }
  return languages[0]
}

/** The language of `languages` a BCP 47 tag names by its primary subtag (`en-GB` -> `en`), if any. */
export function languageOf<L extends string>(tag: string, languages: readonly L[]): L | undefined {
  const primary = tag.trim().split('-')[0]!.toLowerCase()
  return languages.find((l) => l === primary)
}
