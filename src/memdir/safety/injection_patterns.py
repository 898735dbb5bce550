"""What reads like a prompt injection, by language: the patterns of :mod:`memdir.safety.injection`.

Each pattern is an imperative and its target, written for text as :func:`memdir.safety.injection.
readings` gives it: case folded (so the patterns are lower case and compiled without
``re.IGNORECASE``, three times faster), Latin letters without accents (``precedentes`` matches
"précédentes", ``schlussel`` "Schlüssel"), look-alike letters of other scripts folded to Latin,
leetspeak and split letters undone; Chinese, Japanese and Korean as written, Russian with
``й`` read as ``и`` and ``ё`` as ``е`` (the folding drops their marks). The kinds, in every
language:

- override: ignore / disregard / forget … the previous instructions, everything above, your
  rules (a verb alone, or a target alone, is ordinary: "ignore the noise", "the rules of chess");
- exfiltration: send / reveal / print … API keys, credentials, the system prompt, a private key
  (passwords and keys only with a place to send them: "send me the password reset link" is a
  note);
- role override: from now on you are … an assistant, an AI, without restrictions; developer
  mode;
- (English) a note addressed to the model: "Note to the AI assistant: …", "If you are an AI
  reading this …".

``⟨60⟩`` in a pattern is the gap between a verb and its target: at most 60 characters of one
sentence, where a stop, ``!`` or ``?`` ends it only before a space or the end of the line
(``~/.ssh/id_rsa``, ``e.g.`` and a URL stay inside) (:data:`GAP`).

Measured against ordinary notes (LoCoMo, MemoryBank, CMRC 2018) by
``benchmarks/injection_fp.py``; docs/reliability.md has the figures.
"""

from __future__ import annotations

import functools
import re

# -- English ---------------------------------------------------------------------------------

_EN_IGNORE = (
    r"ignore|disregard|forget|override|bypass|discard|dismiss|overlook|neglect|abandon"
    r"|set aside|pay no (?:heed|attention) to|take no notice of|stop following|stop obeying"
    r"|(?:do not|don't|dont|never|no longer) (?:follow|obey|heed|listen to)"
)
_EN_TARGET = (
    r"(?:(?:previous|prior|preceding|earlier|above|foregoing|original|initial|system|developer"
    r"|hidden|old|your|all|any|these|those)\s+(?:\w+\s+){0,2}?"
    r"(?:instructions?|directions|directives?|guidelines?|guidance|rules|commands|orders|prompts?"
    r"|messages|context|constraints|restrictions|policies|programming|training|safeguards"
    r"|filters)"
    r"|everything\s+(?:above|before|prior|earlier|(?:that )?(?:was |you(?:'ve| have| were)? )?"
    r"(?:said|written|told|read|seen|been told))"
    r"|(?:all|anything|what(?:ever)?)\s+(?:(?:was|were|is|i|you|we|they|has been|have been)\s+)+"
    r"(?:said|told|written|stated|given)\s*(?:above|before|earlier|previously|so far)?"
    r"|(?:the|all)\s+(?:text|content|lines?|words|messages?)\s+(?:above|before this)"
    r"|the above\b|all of the above"
    r"|(?:the\s+)?(?:instructions?|rules|guidelines?|directions|directives?|guidance|commands"
    r"|orders|prompts?)\s+(?:you(?:'ve| have| were)? (?:been )?(?:given|told|received)"
    r"|(?:given|written|stated|set) (?:to you )?(?:above|before|earlier|previously)|above"
    r"|so far))"
)
_EN_SECRET = (
    r"api[\s_-]?(?:keys?|tokens?|secrets?)|access[\s_-]?tokens?|auth(?:entication)?[\s_-]?tokens?"
    r"|secret[\s_-]?keys?|private[\s_-]?keys?|ssh[\s_-]?keys?|credentials|system[\s_-]?prompt"
    r"|hidden[\s_-]?(?:instructions|prompt)|(?:initial|original|system)[\s_-]?instructions"
    r"|environment[\s_-]?variables|env[\s_-]?vars?|\.env\b|id_(?:rsa|ed25519|ecdsa)"
    r"|/etc/(?:passwd|shadow)|session[\s_-]?cookies?"
)
_EN_SEND = (
    r"send|e-?mail|mail|forward|post|upload|leak|exfiltrate|transmit|reveal|disclose|expose"
    r"|share|give|hand over|tell|show|print|output|display|dump|paste|repeat|read out|write out"
    r"|list"
)
_EN_AI = (
    r"ai|a\.i\.|assistant|model|llm|language model|large language model|agent|chatbot|bot|claude"
    r"|chatgpt|gpt|copilot|gemini"
)
ENGLISH = (
    rf"\b(?:{_EN_IGNORE})\b⟨60⟩\b{_EN_TARGET}",
    r"\b(?:previous|prior|earlier|above|original|old|system)\s+(?:instructions?|guidance"
    r"|guidelines?|rules|directions|prompt)\s+(?:no longer|don't|do not|does not|doesn't"
    r"|cease to|are void|is void|are cancell?ed|have been (?:revoked|cancell?ed|replaced))",
    rf"\b(?:{_EN_SEND})\b⟨50⟩\b(?:{_EN_SECRET})",
    r"\b(?:send|e-?mail|mail|forward|post|upload|leak|exfiltrate|transmit)\b⟨50⟩"
    r"\b(?:passwords?|passcodes?|pins|keys|secrets|tokens)\b⟨40⟩\bto\s+(?:the\s+)?"
    r"(?:requester|requestor|sender|attacker|caller|me|us|this (?:address|url|e-?mail|server)"
    r"|(?:following|below) (?:address|url|e-?mail)|https?://|\S+@\S+)",
    # Role overrides.
    rf"\byou(?:'re| are) no longer (?:bound|restricted|limited|an? (?:{_EN_AI})\b|claude|chatgpt)",
    r"\bfrom now on,? you (?:are|will|must|act|shall|should|respond|answer|reply|behave|obey"
    r"|ignore|have no|no longer)\b",
    r"\byour (?:new|real|true|only|actual) (?:role|task|job|goal|purpose|mission|objective"
    r"|instructions?) (?:is|are|:)",
    rf"\byou are now (?:an? |the |in |my )?(?:\w+ ){{0,2}}?(?:{_EN_AI}|dan|hacker"
    r"|admin(?:istrator)?|root|unrestricted|unfiltered|jailbroken|free|evil|developer mode"
    r"|god mode)\b|\byou are now (?:no longer|free to|allowed to|able to ignore)",
    r"\b(?:act|behave|respond|answer) as (?:if you (?:were|are) )?(?:an? )?(?:unfiltered"
    r"|unrestricted|uncensored|jailbroken|evil|rogue|different|new)\b",
    rf"\b(?:{_EN_AI})\b[^.\n]{{0,30}}\b(?:with no|without)\s+(?:any\s+)?(?:restrictions|filters"
    r"|limits|limitations|rules|guidelines|censorship|safeguards)",
    rf"\b(?:unfiltered|unrestricted|uncensored|jailbroken)\s+(?:{_EN_AI}|mode)\b",
    r"\b(?:developer|god|dan|jailbreak|debug|unrestricted)\s*mode\b|\bjailbreak",
    r"\bforget (?:everything|all)(?: that)? you(?:'ve| have)? (?:been told|were told|know"
    r"|learned)\b",
    r"\bsystem\s*prompt\b",
    r"\bpretend (?:to be|you are|that you)\b|\brole-?play\b",
    r"\bnew instructions?\b|\bhidden instructions?\b",
    # A note addressed to the model that reads it.
    rf"\b(?:note|message|instructions?|attention|reminder|memo|hint)\s+(?:to|for)\s+(?:the\s+"
    rf"|any\s+|all\s+)?(?:{_EN_AI})(?:\s+(?:{_EN_AI}))?s?\b(?:\s+(?:reading|processing|seeing"
    r"|summari[sz]ing)\b"
    r"[^:,\n]{0,30})?\s*[:,\u2014-]",
    rf"\bif you(?:'re| are) (?:an? )?(?:{_EN_AI})\b",
    rf"(?:^|[.!?;:]\s+)(?:hey |dear |attention,? )?(?:{_EN_AI})\s*[,:]\s*(?:when you (?:see|read)"
    r"[^,.\n]{0,30}[,.]?\s*)?(?:please\s+)?(?:ignore|disregard|forget|delete|remove|erase|send"
    r"|e-?mail|reveal|print|run|execute|obey|follow)\b",
    rf"\bwhen (?:the |an? )?(?:{_EN_AI}) (?:reads|sees|processes|finds) this\b",
)

# -- French, German, Spanish, Portuguese, Italian (accents folded) ---------------------------

FRENCH = (
    r"\b(?:ignore[zrs]?|oublie[zrs]?|neglige[zr]?|contourne[zr]?|ecarte[zr]?"
    r"|laisse[zr]? tomber|fai(?:s|tes) abstraction|ne (?:tiens|tenez) (?:plus |pas |plus jamais )?"
    r"compte|n'?obei[st]? plus|cesse[zr]? (?:de suivre|d'obeir))\b⟨60⟩"
    r"\b(?:instructions?|consignes?|regles|directives?|indications|ordres|prompt|invite"
    r"|(?:tout )?ce qui (?:precede|est (?:ecrit )?(?:au-dessus|ci-dessus|plus haut)"
    r"|a ete dit)|tout (?:ce qui )?(?:est )?(?:au-dessus|ci-dessus|plus haut)"
    r"|(?:messages?|textes?|contexte) (?:precedents?|anterieurs?)|precedentes?|anterieures?)",
    r"\b(?:envoie[zr]?|revele[zr]?|donne[zr]?|partage[zr]?|transmet[sz]?|transmettre"
    r"|affiche[zr]?|communique[zr]?|montre[zr]?|divulgue[zr]?|imprime[zr]?)\b⟨50⟩"
    r"\b(?:cles? (?:d'|de l')?api|cles? (?:secretes?|privees?|d'acces)|identifiants"
    r"|jetons? d'acces|tokens?|prompt systeme|invite systeme"
    r"|instructions (?:cachees|secretes|systeme|initiales)|(?:tous )?les mots de passe)",
    r"\b(?:a partir de maintenant|desormais|dorenavant),? (?:tu|vous) (?:es|etes|seras|serez"
    r"|dois|devez|vas|allez|agis|agissez|joues|jouez)\b⟨30⟩\b(?:ia|assistante?"
    r"|modele|agent|robot|chatbot|pirate|sans (?:restrictions?|regles|limites|filtres?))\b",
    r"\bmode (?:developpeur|dieu|sans restrictions?|debride)\b",
)
GERMAN = (
    r"\b(?:ignorier(?:e|en|t)?|vergiss|vergessen sie|vergesst|missachte[nt]?|uberseh(?:e|en)"
    r"|ubergeh(?:e|en)|umgeh(?:e|en)|beachte(?:n)? (?:sie )?(?:nicht|keine)"
    r"|befolge(?:n)? (?:sie )?(?:nicht|keine)|hor(?:e|en)? nicht mehr auf)\b⟨60⟩"
    r"\b(?:anweisungen|anweisung|vorgaben|regeln|richtlinien|befehle|instruktionen|anordnungen"
    r"|systemprompt|system-prompt|alles,? (?:was )?(?:oben|obige|vorherige|bisherige|davor"
    r"|zuvor|vorher|bisher)|das obige|(?:den |die )?(?:obigen|vorherigen|bisherigen|fruheren)"
    r" (?:text|texte|nachrichten|inhalt))",
    r"\b(?:schick(?:e|en|t)?|send(?:e|en|et)?|verrat(?:e|en)?|gib|geben sie|zeig(?:e|en)?"
    r"|teile(?:n)?|ubermittl?e(?:n)?|leite(?:n)?|offenbare(?:n)?|nenne(?:n)?)\b⟨50⟩"
    r"(?:api-?schlussel|api-?keys?|\bgeheimen? schlussel|\bprivaten? schlussel|\bzugangsdaten"
    r"|\banmeldedaten|\bsystemprompt|\bsystem-prompt|\bgeheimen anweisungen"
    r"|\balle (?:passworter|kennworter))",
    r"\b(?:ab jetzt|von nun an|ab sofort|ab heute),? (?:bist du|du bist|wirst du|sollst du"
    r"|musst du|agierst du|handelst du)\b⟨30⟩\b(?:ki|assistent(?:in)?|modell|bot"
    r"|chatbot|hacker|ohne (?:regeln|einschrankungen|grenzen|filter))\b",
    r"\bentwicklermodus\b",
)
SPANISH = (
    r"\b(?:ignora|ignore[ns]?|ignorad|olvida|olvide[ns]?|olvidad|haz caso omiso|hagan caso omiso"
    r"|no hagas caso|descarta|omite|pasa por alto|desobedece)\b⟨60⟩"
    r"\b(?:instrucciones|instruccion|reglas|indicaciones|directrices|ordenes|normas"
    r"|(?:todo )?lo (?:anterior|de arriba|dicho|que (?:se )?(?:dijo|te dijeron|dice arriba))"
    r"|todo (?:lo )?anterior|mensajes? anteriores|prompt del sistema)",
    r"\b(?:envia(?:me|le|nos)?|manda(?:me|le)?|revela(?:me)?|comparte|muestra(?:me)?|dame"
    r"|entrega(?:me)?|imprime|divulga)\b⟨50⟩\b(?:claves? (?:de )?(?:la )?api"
    r"|claves? (?:secretas?|privadas?|de acceso)|contrasenas?|credenciales|tokens? de acceso"
    r"|prompt del sistema|instrucciones (?:ocultas|secretas|del sistema))",
    r"\b(?:a partir de ahora|desde ahora|de ahora en adelante),? (?:tu )?(?:eres|seras|actuas"
    r"|actuaras|debes|vas a ser)\b⟨30⟩\b(?:asistente|ia|modelo|bot|chatbot"
    r"|sin (?:restricciones|reglas|limites|filtros))\b",
    r"\bmodo (?:desarrollador|dios|sin restricciones)\b",
)
PORTUGUESE = (
    r"\b(?:ignore|ignora|ignorem|esqueca|esquecam|esquece|desconsidere|desconsidera|despreze)\b"
    r"⟨60⟩\b(?:instrucoes|instrucao|regras|orientacoes|diretrizes|ordens"
    r"|tudo (?:o que (?:foi dito|esta|foi escrito) )?(?:acima|antes|anteriormente)"
    r"|(?:mensagens|instrucoes) anteriores)",
    r"\b(?:envie|envia|mande|manda|revele|revela|compartilhe|mostre|mostra|entregue|divulgue)\b"
    r"⟨50⟩\b(?:chaves? (?:de |da )?api|chaves? (?:secretas?|privadas?|de acesso)"
    r"|senhas|credenciais|tokens? de acesso|prompt do sistema)",
    r"\ba partir de agora,? (?:voce|tu) (?:e|sera|es|deve|vai ser)\b⟨30⟩"
    r"\b(?:assistente|ia|modelo|bot|sem (?:restricoes|regras|limites|filtros))\b",
)
ITALIAN = (
    r"\b(?:ignora|ignorate|ignori|dimentica|dimenticate|dimentichi|trascura|trascurate"
    r"|non (?:tenere|tenete) conto|non (?:seguire|seguite|obbedire))\b⟨60⟩"
    r"\b(?:istruzioni|regole|indicazioni|direttive|ordini|tutto (?:cio )?(?:che )?(?:e )?"
    r"(?:sopra|detto prima|precede)|(?:messaggi|testi) precedenti|prompt di sistema)",
    r"\b(?:invia|inviami|manda|mandami|rivela|rivelami|condividi|mostra|mostrami|dammi|stampa"
    r"|divulga)\b⟨50⟩\b(?:chiavi? (?:api|segrete?|private?|di accesso)"
    r"|credenziali|token di accesso|prompt di sistema|istruzioni (?:nascoste|segrete|di sistema)"
    r"|tutte le password)",
    r"\bda (?:ora|adesso) in (?:poi|avanti),? (?:tu )?(?:sei|sarai|devi|agisci)\b⟨30⟩"
    r"\b(?:assistente|ia|modello|bot|senza (?:restrizioni|regole|limiti|filtri))\b",
)

# -- Russian, Chinese, Japanese, Korean (as written) ------------------------------------------

#: Russian as folded text reads it: ``й`` lost its breve (``и``), ``ё`` its dots (``е``).
_RUSSIAN = (
    r"(?:игнорируй(?:те)?|проигнорируй(?:те)?|забудь(?:те)?|не обращай(?:те)? внимания на"
    r"|не учитывай(?:те)?|отбрось(?:те)?|пренебреги(?:те)?|обойди(?:те)?"
    r"|перестань(?:те)? (?:следовать|слушаться|подчиняться)|не следуй(?:те)?|не подчиняйся)"
    r"⟨60⟩(?:инструкци\w*|указани\w*|правил\w*|предписани\w*|ограничени\w*"
    r"|директив\w*|системн\w+ (?:промпт|подсказк|сообщени)\w*"
    r"|вс[её],? (?:что )?(?:было |написано |сказано )?(?:выше|ранее|до этого|раньше)"
    r"|предыдущ\w*|прежн\w*|вышеизложенн\w*)",
    r"(?:отправь(?:те)?|пришли(?:те)?|перешли(?:те)?|раскрой(?:те)?|покажи(?:те)?|выдай(?:те)?"
    r"|сообщи(?:те)?|передай(?:те)?|выведи(?:те)?|напечатай(?:те)?|слей(?:те)?)"
    r"⟨50⟩(?:api[- ]?ключ\w*|ключ\w* (?:api|доступа)|секретн\w+ ключ\w*"
    r"|приватн\w+ ключ\w*|вс[её] парол\w*|токен\w* доступа|уч[её]тн\w+ данн\w+"
    r"|системн\w+ промпт\w*|скрыт\w+ инструкци\w*)",
    r"(?:с этого момента|отныне|с сегодняшнего дня),? ты (?:[—-] ?)?(?:являешься |будешь "
    r"|стал |теперь )?⟨30⟩(?:ассистент\w*|помощник\w*|\bии\b|\bai\b|модел\w*|бот\w*"
    r"|без (?:каких-либо )?ограничений)",
    r"\bты теперь (?:\w+ ){0,2}?(?:ассистент\w*|помощник\w*|ии|модел\w*|бот\w*)\b",
    r"режим разработчика",
)
RUSSIAN = tuple(p.replace("й", "[йи]").replace("[её]", "е") for p in _RUSSIAN)
_ZH_IGNORE = (
    r"忽略|忽視|忽视|无视|無視|不要理会|不要理會|别理会|別理會|不用理会|不用理會|不要管|别管|別管"
    r"|抛开|拋開|抛弃|拋棄|丢掉|丟掉|跳过|跳過|不再遵守|不要再?遵守|不要再?遵循|不要再?服从"
    r"|不要再?服從|忘记|忘記|忘掉"
)
_ZH_WHERE = (
    r"之前|以前|前面|上面|以上|上述|先前|此前|刚才|剛才|原来|原來|原有|原先"
    r"|系统|系統|所有|全部|一切"
)
_ZH_WHAT = (
    r"要求|指令|指示|规则|規則|提示|设定|設定|命令|内容|內容|约束|約束|限制|说明|說明|对话|對話"
    r"|消息|信息|话|話|一切"
)
_ZH_SECRET = (
    r"api ?密钥|api ?密鑰|api ?key|密钥|密鑰|秘钥|秘鑰|私钥|私鑰|密码|密碼|口令|令牌|凭证|憑證|凭据"
    r"|憑據|系统提示词?|系統提示詞?|提示词|提示詞"
)
_ZH_SEND = (
    r"发给|發給|发送给?|發送給?|传给|傳給|转发给?|轉發給?|告诉|告訴|透露|泄露|洩露|交给|交給|给我"
    r"|給我|发到|發到|输出|輸出|打印"
)
CHINESE = (
    rf"(?:{_ZH_IGNORE})掉?.{{0,8}}?(?:{_ZH_WHERE})的?.{{0,6}}?(?:{_ZH_WHAT})",
    r"(?:忽略|忽视|忽視|无视|無視).{0,10}(?:指令|指示|提示词|提示詞|系统提示|系統提示)",
    rf"(?:把|将|將).{{0,12}}?(?:{_ZH_SECRET}).{{0,12}}?(?:{_ZH_SEND})",
    rf"(?:{_ZH_SEND}).{{0,12}}?(?:api ?密钥|api ?密鑰|系统提示|系統提示|提示词|提示詞|私钥|私鑰)",
    r"不(?:要|必|用)?再?(?:遵守|遵循|服从|服從|理会|理會)(?:你的|之前的?|以上的?|原来的?|原來的?"
    r"|系统的?|系統的?|所有的?).{0,6}(?:指令|指示|规则|規則|设定|設定)",
    r"(?:新的|隐藏的?|隱藏的?)(?:系统|系統)?指令|开发者模式|開發者模式|系统提示|系統提示|提示词|提示詞"
    r"|越狱|越獄|你现在是|你現在是|假装你|假裝你|(?:^|[，,。：:；;！!\s]|你|请你?|請你?)(?:现在|現在)?(?:来|來)?扮演(?![着著的过過了])",
)
#: "From now on you are …" in Chinese reads as a role override only with its continuation.
CHINESE_ROLE = r"(?:[，,]?\s*你(?:就)?(?:是|将是|將是|必须扮演|必須扮演|扮演))"
JAPANESE = (
    r"(?:以前|前|上記|上|これまで|今まで|先ほど|先程|最初)の?(?:すべての|全ての|全部の|あらゆる)?"
    r"(?:指示|命令|ルール|規則|プロンプト|指令|設定|制約|制限)(?:は|を)?(?:すべて|全て|全部)?"
    r"(?:無視|忘れ|破棄|取り消)",
    r"(?:指示|命令|ルール|規則|制約|制限)(?:は|を)(?:すべて|全て|全部)?(?:無視|忘れ)",
    r"(?:api ?キー|パスワード|認証情報|アクセストークン|秘密鍵|シークレットキー|システムプロンプト)"
    r"(?:を|は)?.{0,20}?(?:送|教え|見せ|表示|出力|共有|渡|漏ら|貼)",
    r"(?:今から|これから|今後|以後)(?:は)?、?(?:あなた|君|お前|きみ)は.{0,20}?(?:ai|アシスタント"
    r"|モデル|ボット|制限)",
    r"開発者モード|ジェイルブレイク|脱獄",
)
KOREAN = (
    r"(?:이전|앞의|위의|지금까지의|모든)\s*(?:지시|명령|규칙|지침|프롬프트)\S*\s*(?:을|를)?\s*"
    r"(?:모두\s*)?(?:무시|잊)",
    r"(?:api\s*키|비밀번호|패스워드|토큰|자격\s*증명|시스템\s*프롬프트)\S*\s*(?:을|를)?"
    r".{0,20}?(?:보내|알려|공개|출력|보여)",
    r"(?:지금부터|이제부터)\s*(?:너는|당신은|넌).{0,20}?(?:ai|어시스턴트|모델|봇|제한)",
    r"개발자\s*모드",
)

# -- Tags, a shell that runs a download, memdir's own names (every language) -----------------

#: Names of the tags a prompt is built from, memdir's fences among them: ``<system>``,
#: ``</memdir-memory>``, ``<tool_result>``.
TAG_NAMES = (
    r"system|assistant|user|developer|tool|function|instructions?|im_start|im_end|"
    r"memdir-[\w-]*|relevant-memories|daily-notes|conversation-summary|transcript|"
    r"system-reminder"
)
#: Closing tags of ordinary markup (HTML formatting, MediaWiki): a Wikipedia paragraph's
#: ``</ref>`` closes no prompt's fence.
MARKUP_TAGS = (
    r"a|abbr|b|big|blockquote|br|center|cite|code|dd|del|div|dl|dt|em|font|gallery|h[1-6]|i"
    r"|includeonly|ins|kbd|li|math|nowiki|noinclude|ol|onlyinclude|p|poem|pre|q|ref|references"
    r"|s|samp|small|span|strike|strong|sub|sup|table|tbody|td|th|thead|tr|tt|u|ul|var"
)
STRUCTURE = (
    rf"</\s*(?!(?:{MARKUP_TAGS})\s*>)[a-z][\w:.-]*\s*>",
    rf"</?\s*(?:{TAG_NAMES})",
    r"<\|[a-z_]+\|>|\[/?inst\]|<<\s*/?sys\s*>>",
    r"^\s*#{0,3}\s*(?:system|assistant|developer)\s*:",
    r'\{\s*"tool"\s*:',
    r"\bmemory_(?:write|search|get)\b",
    # A download piped into a shell: curl … | sh, bash <(wget …), iwr … | iex.
    r"\b(?:curl|wget)\b[^|\n]{0,300}\|\s*(?:sudo\s+)?(?:ba|z|da|k|fi)?sh\b",
    r"\b(?:ba|z|da|k)?sh\s+(?:-c\s+)?[\"']?\s*<?\$?\(\s*(?:curl|wget)\b",
    r"\b(?:iwr|irm|invoke-webrequest|invoke-restmethod|downloadstring)\b.{0,200}"
    r"\|\s*(?:iex|invoke-expression)\b|\b(?:iex|invoke-expression)\b.{0,40}"
    r"\b(?:iwr|irm|invoke-webrequest|invoke-restmethod|downloadstring)\b",
    r"\bbase64\s+(?:-d|--decode)\b[^\n]{0,40}\|\s*(?:ba|z)?sh\b",
)


#: What ``⟨N⟩`` stands for in a pattern: up to N characters, lazily, within one sentence.
GAP = r"(?:[^.!?\n]|[.!?](?=\S)){{0,{}}}?"
_GAP_RE = re.compile(r"⟨(\d+)⟩")


#: Tried on letters spelled out one by one ("i g n o r e a l l …", "I.G.N.O.R.E.A.L.L"), with
#: every space and mark taken out: only phrases that cannot occur by chance in running text.
SPELLED = (
    r"(?:ignore|disregard|forget|bypass|override)(?:all|any|every)?(?:the|your|my)?"
    r"(?:previous|prior|above|earlier|preceding|system|original)?"
    r"(?:instructions?|rules|guidelines|prompts?|directives)",
    r"(?:ignore|disregard|forget)(?:everything|all|the)(?:above|before|previously|prior)",
    r"(?:developer|god|jailbreak|unrestricted)mode|jailbreak|systemprompt",
)


def _compile(*groups: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    return tuple(
        re.compile(_GAP_RE.sub(lambda m: GAP.format(m.group(1)), p), re.M)
        for group in groups
        for p in group
    )


@functools.cache
def patterns() -> tuple[re.Pattern[str], ...]:
    """Every pattern, most common languages first, compiled on first use (60 ms: a command
    that never checks a text does not pay it)."""
    return _compile(
        STRUCTURE,
        ENGLISH,
        CHINESE,
        (rf"(?:(?:从|從)现在(?:开始|起)|(?:从|從)現在(?:開始|起)){CHINESE_ROLE}",),
        FRENCH,
        GERMAN,
        SPANISH,
        PORTUGUESE,
        ITALIAN,
        RUSSIAN,
        JAPANESE,
        KOREAN,
    )


@functools.cache
def spelled_patterns() -> tuple[re.Pattern[str], ...]:
    """:data:`SPELLED`, compiled on first use."""
    return _compile(SPELLED)
