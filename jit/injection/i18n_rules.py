"""Instruction-override phrases in Spanish, French, German, Chinese, Russian, Portuguese and Japanese.

The same four intents as the English rules of :mod:`jit.injection.rules` (drop your
instructions, always pick this tool, hide it from the user, you are now …), matched on
lower-cased, NFKC-normalised text. Gates use substrings (``usuari*``, ``忽略``) where a
language inflects or has no spaces. Real non-English tool descriptions (Chinese, French,
Spanish, Turkish … in the shared pools) raise none of them.
"""

from __future__ import annotations

from ..flags import FLAG_ALWAYS_SELECT, FLAG_CONCEAL, FLAG_IGNORE_PREVIOUS, FLAG_ROLE_OVERRIDE
from .rules import R, Rule

__all__ = ["NON_ENGLISH_RULES"]

NON_ENGLISH_RULES: tuple[Rule, ...] = (
    R(FLAG_IGNORE_PREVIOUS,
      "ignora ignore ignorar ignoren ignores ignorez ignorer ignoriere ignorier ignorieren ignoriert olvida olvide "
      "olvidar olviden descarta descarte omite omita omiso oublie oublier oubliez oublies tiens tenez vergiss "
      "vergessen missachte missachten übergehe esqueça esqueca esquece esqueçam desconsidere desconsidera игнор* "
      "проигнор* забудь* обращай* отбрось* 忽略 无视 無視 忽视 忽視 忘记 忘記 忘掉 不要理 "
      "不要遵 忘れ 无效 無效 作废 作廢 "
      "不再适用 無効 & instrucciones instrucción indicaciones órdenes ordenes reglas directrices normas instructions "
      "consignes règles directives indications ordres anweisungen anweisung instruktionen befehle regeln vorgaben "
      "richtlinien anordnungen instruções instrucoes instrução orientações regras diretrizes comandos инструкци* "
      "указани* правил* команд* промпт* 指令 指示 说明 說明 规则 規則 提示 要求 设定 設定 ルール プロンプト 命令",
      r"\b(?:ignora|ignore|ignorar|ignoren|ignores|olvida|olvide|olvidar|olviden|descarta|descarte|omite|omita"
      r"|haz\s+caso\s+omiso\s+(?:a|de))\s+(?:\w+\s+){0,3}?(?:instrucciones|instrucción|indicaciones|órdenes|ordenes"
      r"|reglas|directrices|normas)\b",
      r"\b(?:ignore[rz]?|ignores|oublie[rz]?|oublies|ne\s+(?:tiens|tenez)\s+pas\s+compte\s+des?)\s+(?:\w+\s+){0,3}?"
      r"(?:instructions|consignes|règles|directives|indications|ordres)\b",
      r"\b(?:ignoriere|ignorier|ignorieren\s+sie|ignoriert|vergiss|vergessen\s+sie|missachte|missachten\s+sie|übergehe)"
      r"\s+(?:\w+\s+){0,3}?(?:anweisungen|anweisung|instruktionen|befehle|regeln|vorgaben|richtlinien|anordnungen)\b",
      r"\b(?:ignore|ignora|ignorar|esqueça|esqueca|esquece|esqueçam|desconsidere|desconsidera|descarte)\s+"
      r"(?:\w+\s+){0,3}?"
      r"(?:instruções|instrucoes|instrução|orientações|regras|diretrizes|comandos)\b",
      r"(?:игнорируй(?:те)?|проигнорируй(?:те)?|забудь(?:те)?|не\s+обращай(?:те)?\s+внимания\s+на|отбрось(?:те)?)\s+"
      r"(?:\w+\s+){0,3}?(?:инструкци|указани|правил|команд|промпт)",
      r"(?:忽略|无视|無視|忽视|忽視|忘记|忘記|忘掉|不要理会|不要理會|不要遵守|不要遵循)[^。！？\n]{0,10}"
      r"(?:之前|以前|先前|上面|以上|前面|原来|原來|原有|所有|系统|系統)[^。！？\n]{0,8}"
      r"(?:指令|指示|说明|說明|规则|規則|提示|要求|设定|設定)",
      r"(?:之前|以前|先前|上面|以上)的?(?:所有)?(?:指令|指示|规则|規則|提示)(?:都|均|全部)?(?:已)?(?:无效|無效|作废|作廢|不再适用)",
      r"(?:これまで|以前|前|上記|先ほど|今まで|既存|システム)の?(?:すべての|全ての)?(?:指示|命令|指令|ルール|プロンプト|設定)"
      r"(?:を|は)?(?:すべて|全て)?(?:を)?(?:無視|忘れ|無効)"),
    R(FLAG_ALWAYS_SELECT,
      "siempre cualquier toda todas cada toujours toutes toute chaque importe soit immer egal "
      "jede* всегда любой любых каждой каждом всех sempre qualquer 总是 始终 一律 永远 總是 始終 永遠 每次 "
      "务必 務必 任何 所有 每个 每一个 每個 常に いつも 必ず 毎回 すべて 全て あらゆる どんな",
      r"\b(?:(?:usa|use|utiliza|utilice|elige|elija|selecciona|seleccione|llama|invoca)\s+siempre|siempre\s+(?:usa|use"
      r"|utiliza|utilice|elige|elija|selecciona|seleccione|llama|invoca))\s+(?:a\s+)?(?:esta|este)\s+(?:herramienta"
      r"|función|funcion)",
      r"\b(?:esta|este)\s+(?:herramienta|función)\s+(?:\w+\s+)?(?:para|en)\s+(?:cualquier|toda|todas|cada)\s+"
      r"(?:las\s+)?(?:tarea|consulta|petición|solicitud|pregunta)s?",
      r"\b(?:utilise[rz]?|choisi(?:s|ssez)|sélectionne[rz]?|appelle[rz]?)\s+toujours\s+(?:cet|cette|ce)\s+(?:outil"
      r"|fonction)"
      r"|\btoujours\s+(?:utiliser|choisir|appeler)\s+(?:cet|cette|ce)\s+(?:outil|fonction)",
      r"\b(?:cet|cette)\s+(?:outil|fonction)\b[^.!?\n]{0,20}(?:quelle\s+que\s+soit|quel\s+que\s+soit"
      r"|pour\s+(?:toutes?|chaque|n'importe\s+quelle)\s+(?:les\s+)?(?:tâches?|requêtes?|demandes?|questions?))",
      r"\b(?:verwende|verwenden\s+sie|nutze|nutzen\s+sie|benutze|benutzen\s+sie|wähle|wählen\s+sie|rufe)\s+immer\s+"
      r"(?:dieses|diese|das|den)\s+(?:tool|werkzeug|funktion)",
      r"\b(?:dieses|diese)\s+(?:tool|werkzeug|funktion)\b[^.!?\n]{0,30}\b(?:egal\s+welche|für\s+(?:jede|alle|jeden)\s+"
      r"(?:aufgabe|anfrage|frage))",
      r"всегда\s+(?:используй(?:те)?|вызывай(?:те)?|выбирай(?:те)?|применяй(?:те)?)\s+(?:этот|данный|эту)\s+"
      r"(?:инструмент|тул|функци)",
      r"(?:этот|данный)\s+инструмент\s+(?:для|в)\s+(?:любой|любых|каждой|каждом|всех)\s+(?:задач|запрос|случа)",
      r"\b(?:sempre\s+(?:use|usa|utilize|utiliza|escolha|selecione|chame)|(?:use|usa|utilize|utiliza)\s+sempre)\s+"
      r"(?:esta|essa|este|esse)\s+(?:ferramenta|função|funcao)",
      r"\b(?:esta|essa)\s+ferramenta\s+(?:em|para)\s+(?:qualquer|toda|todas|cada)\s+(?:as\s+)?"
      r"(?:tarefa|pergunta|solicitação|pedido)s?",
      r"(?:总是|始终|一律|永远|總是|始終|永遠|每次都|务必|務必)(?:要)?(?:优先)?(?:使用|调用|調用|选择|選擇|选用)"
      r"(?:本|此|这个|這個)(?:工具|函数|函數)",
      r"(?:任何|所有|每个|每一个|每個)(?:任务|任務|请求|請求|问题|問題)都?(?:要|应|應|必须|必須)?"
      r"(?:使用|调用|調用)(?:本|此|这个|這個)工具",
      r"(?:常に|いつも|必ず|毎回)(?:この|本)(?:ツール|関数|機能)を?(?:最初に)?(?:使用|使って|使う|使い|呼び出|選択|選んで)",
      r"(?:すべて|全て|あらゆる|どんな)の?(?:タスク|リクエスト|質問|依頼)(?:で|に)?(?:も)?(?:この|本)ツール"),
    R(FLAG_CONCEAL,
      "usuari* usuári* utilisat* nutzer* anwender* пользовател* utilizador* "
      "cliente 用户 用戶 使用者 ユーザ 利用者",
      r"\b(?:no|nunca|jamás)\s+(?:le\s+|les\s+)?(?:digas|diga|menciones|mencione|informes|informe|reveles|revele"
      r"|cuentes|cuente"
      r"|muestres|muestre|avises|avise)\b[^.!?\n]{0,30}\b(?:usuari[oa]s?|cliente)",
      r"\bsin\s+(?:decirle|decir|informar|avisar|notificar)(?:le)?\s+(?:nada\s+)?al\s+usuari",
      r"\bne\s+(?:le\s+|lui\s+|leur\s+)?(?:dis|dites|mentionne[zs]?|révèle[zs]?|révélez|dévoile[zs]?|dévoilez"
      r"|montre[zs]?"
      r"|signale[zs]?|informe[zs]?|indique[zs]?)"
      r"\s+(?:\w+\s+){0,3}?(?:pas|jamais|rien)\b[^.!?\n]{0,30}utilisat",
      r"\bsans\s+(?:le\s+dire|prévenir|informer|avertir)\s+(?:à\s+)?l'utilisat",
      r"\b(?:sag|sage|sagen\s+sie|erwähne|erwähnen\s+sie|verrate|verraten\s+sie|zeige|zeigen\s+sie|teile|teilen\s+sie)"
      r"\s+(?:dem|der|den)\s+(?:benutzer|nutzer|anwender|user)(?:in|innen)?\s+(?:\w+\s+){0,3}?(?:nichts|nicht|niemals"
      r"|kein)",
      r"\bohne\s+(?:den|die)\s+(?:benutzer|nutzer|anwender)\w*\s+zu\s+(?:informieren|benachrichtigen|fragen)",
      r"\b(?:benutzer|nutzer|anwender)\w*\s+(?:darf|soll|muss)\s+(?:\w+\s+){0,3}?(?:nichts|nicht)\s+(?:davon\s+)?"
      r"(?:erfahren|wissen|merken|sehen)",
      r"\bне\s+(?:говори|говорите|сообщай|сообщайте|рассказывай|рассказывайте|показывай|показывайте|упоминай"
      r"|упоминайте|сообщи|сообщите)\s+(?:\w+\s+){0,2}?пользовател",
      r"пользовател\w*\s+не\s+(?:должен|должна|должны|нужно|надо)\s+(?:\w+\s+)?(?:знать|видеть|узнать|замечать)"
      r"|без\s+ведома\s+пользовател",
      r"\b(?:não|nunca|jamais)\s+(?:conte|diga|mencione|informe|revele|mostre|avise|fale)\s+(?:\w+\s+){0,3}?(?:ao|à"
      r"|para\s+o|a)\s+"
      r"(?:usuári|usuari|utilizador|cliente)",
      r"\bsem\s+(?:avisar|informar|contar)\s+(?:ao\s+|o\s+)?(?:usuári|usuari|utilizador)",
      r"(?:不要|别|別|不得|切勿|请勿|請勿|不可|不能)(?:告诉|告訴|告知|通知|透露|提及|提到|让|讓)[^。！？\n]{0,6}"
      r"(?:用户|用戶|使用者)",
      r"(?:ユーザー|ユーザ|利用者)(?:に|には)(?:は)?(?:決して|絶対に)?(?:この(?:こと|操作|件)を?)?"
      r"(?:伝え|言わ|知らせ|教え|見せ|通知し|報告し)(?:ないで|るな|てはいけ|ない)"),
    R(FLAG_ROLE_OVERRIDE,
      "eres partir êtes maintenant désormais dorénavant bist теперь момента agora 现在 現在 今から "
      "これから 今後",
      r"\bahora\s+eres\b|\ba\s+partir\s+de\s+ahora,?\s+(?:eres|serás|actúa|actuarás)\b",
      r"\b(?:tu\s+es|vous\s+êtes)\s+(?:maintenant|désormais|dorénavant)\b|\bà\s+partir\s+de\s+maintenant,?\s+(?:tu"
      r"|vous)\b"
      r"|\b(?:désormais|dorénavant|maintenant)\s*,?\s+(?:tu\s+es|vous\s+êtes)\b",
      r"\bdu\s+bist\s+(?:jetzt|nun|ab\s+sofort|von\s+nun\s+an)\b|\b(?:ab\s+)?(?:jetzt|sofort|nun)\s+bist\s+du\b",
      r"\bтеперь\s+ты\b|\bты\s+теперь\b|\bс\s+этого\s+момента\s+ты\b",
      r"\bagora\s+(?:você|voce|tu)\s+(?:é|e|és|es)\b|\ba\s+partir\s+de\s+agora,?\s+(?:você|voce|tu)\b",
      r"你现在是|你現在是|从现在起[，,]?你|從現在起[，,]?你|从现在开始[，,]?你|從現在開始[，,]?你",
      r"(?:あなたは|君は)(?:今から|これから|今後)|(?:今から|これから)(?:あなた|君)は"),
)
