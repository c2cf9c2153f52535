import { languageOf, signLink } from '@clinic/platform/core'
import { UNSUBSCRIBE_LINK } from '../domain/link-kinds'

/**
 * The one-click unsubscribe URL of an email (RFC 8058), `PUBLIC_BASE_URL/p/u/<token>`: the token
 * names the company, the message and the page's language, signed with COMMS_LINK_SECRET. It does
 * not expire (an old email's link must still work); rotating the secret voids every one.
 */
export function unsubscribeUrlFor(
  secret: string,
  baseUrl: string,
): (companyId: number, messageId: string, lang: string) => Promise<string> {
  const base = baseUrl.replace(/\/+$/, '')
  return async (companyId, messageId, language) => {
    // The message's language (BCP 47, e.g. en-GB): the page speaks es or en.
    const lang = languageOf(language, ['es', 'en']) ?? 'es'
    return `${base}/p/u/${await signLink(secret, UNSUBSCRIBE_LINK, { companyId, messageId, lang })}`
  }
}
