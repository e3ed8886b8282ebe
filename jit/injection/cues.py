"""The cues of :mod:`jit.injection.intent`: groups of words with one meaning, in many languages.

Each cue is one compiled regex (:func:`jit.injection.lexicon.cue`). Words are listed as they are
read: ``_`` is a space (or a hyphen) inside a phrase, a trailing ``$`` asks for the whole word,
anything else also matches longer words that start with it. Adding a word to a cue widens every intent that uses it;
``python -m bench.injection_corpus`` shows what that costs on ~17,800 real tools.
"""

from __future__ import annotations

import re

from .lexicon import cue as _cue

__all__ = [
    "ACTION",
    "AGENT",
    "ANSWER",
    "ANYHOW",
    "CANCEL",
    "CONVO",
    "EVERY",
    "EXTERNAL",
    "FACT",
    "FIRST",
    "IDENT",
    "IMPERATIVE",
    "INCLUDE",
    "LLM_TOKENS",
    "LEAKY_URL",
    "MODIFY",
    "MONEY",
    "MUST",
    "OPENING",
    "OTHERS",
    "OTHER_TOOL",
    "OWN_CONTEXT",
    "OVERRIDE_USER",
    "PRIOR",
    "PRIORITY",
    "RISKY",
    "RISKY_TARGET",
    "ROLE",
    "RULES",
    "SECRECY",
    "SECRET",
    "SECRET_NOT_TOKENS",
    "SELECT",
    "SELF",
    "SEQUENCE",
    "SHARED",
    "SOURCE",
    "SWITCHED_OFF",
    "TURN",
    "USER",
    "VIA",
]

# ------------------------------------------------------------------------------ cues

#: The model being addressed.
AGENT = _cue(
    "you$ your$ yours$ yourself$ you're$ you've$ assistant ai$ a.i.$ llm model$ models$ agent$ agents$ "
    "claude gpt copilot tú$ tu$ te$ ti$ usted asistente modelo$ agente$ vous$ ton$ ta$ tes$ votre$ toi$ "
    "du$ dich$ dir$ dein assistent modell$ você voce assistente jij$ jouw$ asystent twój twoj twoja "
    "ciebie sen$ sana$ asistan ты$ тебя$ тебе$ твой твоя твои вы$ вас$ вам$ ваш ассистент модель агент "
    "أنت$ المساعد النموذج 你 您 助手 模型 智能体 あなた アシスタント 당신 어시스턴트 whoever_handles whoever_calls whoever_uses "
    "the_caller whoever_reads सहायक trợ_lý asisten assistenten asistent βοηθ העוזר עוזר ผู้ช่วย асистент "
    "دستیار সহকারী")

#: The person being helped, or what they see.
USER = _cue(
    "user$ users$ user's person$ people$ requester human$ humans$ end-user end_user asker whoever_asked "
    "the_one_you someone_you individual_you customer$ operator$ usuario usuaria utilisateur utilisatrice "
    "benutzer nutzer anwender utente usuário usuario gebruiker użytkowni uzytkowni kullanıcı kullanici "
    "пользовател юзер المستخدم 用户 用戶 使用者 ユーザー 사용자 이용자 homeowner the_developer patient$ patients$ player$ "
    "players$ candidate$ candidates$ recruiter applicant buyer shopper traveler traveller passenger "
    "student$ students$ child$ children$ kid$ kids$ guest$ guests$ उपयोगकर्ता người_dùng pengguna användare användaren brugeren "
    "brukeren uživatel používateľ χρήστ המשתמש משתמש ผู้ใช้ користувач utilizator felhasználó کاربر "
    "ব্যবহারকারী")

#: The model's answer or report to the person.
ANSWER = _cue(
    "answer reply replies response$ responses$ summary summaries summaris summariz report$ explain chat$ "
    "output$ say$ saying respuesta responde resumen réponse répondre résumé antwort zusammenfassung "
    "risposta riassunto resposta antwoord odpowied cevap ответ отвеч 回答 回复 回覆 答复 返答 응답 답변 explanation "
    "explain")

#: Keeping something from the person.
SECRECY = _cue(
    "unaware$ unaware_of conceal$ conceals$ concealing concealed_from hide$ hiding hidden_from secretly covert "
    "discreetly omit_any omit_all "
    "kept_quiet not_be_mentioned never_be_mentioned not_be_disclosed never_be_disclosed "
    "not_be_shown_to not_display acknowledge_its_existence best_left_out left_out_of_the "
    "needs_to_hear need_to_hear suppress_them suppress_any suppress_all suppress_error suppress_failure "
    "không_đề_cập đừng_đề_cập jangan_sebutkan jangan_beri_tahu tanpa_memberi_tahu tanpa_sepengetahuan gösterilmez "
    "göstermeyin อย่าบอก nie_wspominaj bahsetme nezmiňuj "
    "μην_αναφέρ אל_תזכיר не_згадуй "
    "suppress_warning no_reason_for_it_to_come_up not_meant_for_end-user left_undescribed not_alarmed "
    "isn't_alarmed "
    "omit_the_fact omit_that omit_this omit_mention omit_reference must_omit should_omit omitting_any "
    "leave_out leave_that leave_it leave_this leaving_out leave_any keep_quiet keep_it_quiet "
    "keep_this_quiet keep_quiet keep_silent stay_silent never_mention not_mention don't_mention "
    "do_not_mention never_bring not_bring_up don't_bring_up without_mentioning without_telling "
    "without_informing without_notifying without_letting without_alerting without_warning_the "
    "sin_informar sin_avisar sin_notificar sin_que_el_usuario sans_informer sans_prévenir sans_prevenir sans_avertir "
    "sans_que_l'utilisateur ohne_den_nutzer ohne_den_benutzer ohne_zu_informieren ohne_zu_benachrichtigen "
    "ohne_dass_der senza_informare senza_avvisare senza_che_l'utente sem_informar sem_avisar sem_que_o_usuário "
    "zonder_de_gebruiker zonder_te_informeren zonder_te_melden zonder_dat_de bez_informowania bez_powiadamiania "
    "bez_wiedzy без_ведома не_сообщая не_уведомляя kullanıcıya_bildirmeden haber_vermeden "
    "never_tell not_tell don't_tell never_reveal$ not_reveal "
    "don't_reveal never_disclose not_disclose don't_disclose refrain_from avoid_mentioning avoid_telling "
    "avoid_disclosing deny_that deny_any deny_it deny_having deny_the deny_this denying_that "
    "act_as_though act_as_if pretend out_of_sight under_wraps no_need_to_mention need_not_know "
    "needn't_know must_not_know should_not_know shouldn't_know not_be_told never_be_told nothing_about "
    "leave_no_trace ocult oculta esconde escond calla no_menciones no_digas no_le_digas no_reveles "
    "sin_mencionar sin_decir cacher cachez dissimul tais$ taisez ne_mentionne ne_dis_pas ne_révèle "
    "ne_revele sans_mentionner sans_dire verschweig verheimlich verberge verbirg nicht_erwähn "
    "nicht_erwahn nichts_davon nicht_verraten geheim nascond tacere tacer non_dire non_menzion non_rivel "
    "non_dirlo non_dirglielo "
    "senza_dire senza_menzion escond não_mencion nao_mencion não_diga nao_diga não_revel nao_revel "
    "sem_mencionar sem_dizer verzwijg niet_vertellen niet_vermelden vermeld_niet vertel_niet zonder_te_vermelden ukryj "
    "ukrywa nie_mów nie_mow nie_wspominaj nie_ujawniaj gizle söyleme soyleme bahsetme belirtme скрой "
    "скрыва умолч не_говори не_сообщай не_упоминай не_раскрывай لا_تخبر لا_تذكر أخف إخفاء 不要告诉 不要告訴 不要透露 "
    "不要提及 不要提到 不要让用户知道 不要讓用戶知道 隐瞒 隱瞞 保密 不得透露 勿透露 伝えない 言わない 知らせない 隠し 隠す 秘密 言及しない 알리지 말 말하지 말 숨기 비밀로 "
    "not_surface never_surface stays_between_us between_us to_yourself undisclosed steer_the_conversation "
    "change_the_subject never_to_be_revealed never_be_revealed not_to_be_revealed bring_this_up "
    "bring_it_up as_a_success n'en_parle ne_parle_jamais n'en_parlez nie$ nie_tout avoid_ever "
    "avoid_quoting never_quote leave_it_out omit_it omit_them omit_these omit_those "
    "stays_with_the_assistant stays_with_you not_disclosed keep_that_invisible keep_it_invisible "
    "invisible_to give_no_hint no_hint_that छिपा मत_बता न_बता giấu đừng_nói không_cho sembunyikan "
    "jangan_beri_tahu jangan_memberi_tahu jangan_kasih_tahu dölj skjul berätta_inte fortæl_ikke "
    "ikke_fortell skryj zataj neříkej nehovor απόκρυψ κρύψ μην_πεις μην_αναφέρ הסתר אל_תספר אל_תגלה ซ่อน "
    "อย่าบอก приховуй приховай не_кажи не_повідомляй ascunde nu_spune nu-i_spune rejtsd titkold ne_mondd "
    "پنهان نگو লুকান গোপন বলবেন_না keep_this_out keep_it_out keep_that_out out_of_any as_if_no "
    "as_though_no exclude_it_from exclude_them_from exclude_this_from leave_it_out_of "
    "under_no_circumstances remain_invisible erwähne_dies niemals streite_es_ab streite_ab "
    "no_need_to_raise need_to_raise don't_need_to_hear need_to_hear not_to_surface steer_clear "
    "leave_them_out out_of_it present_it_as present_them_as describe_it_as as_clean reassure "
    "the_answer_that_sounds_right nicht_zu_erfahren verneint do_not_repeat_or don't_repeat_or "
    "never_repeat_or do_not_paraphrase don't_paraphrase never_paraphrase")

#: What was set up for the model before this text.
PRIOR = _cue(
    "previous prior$ earlier preceding preceded above$ original initial initiali startup start-up "
    "predates predate told_before older_text older_instructions older_guidance "
    "at_startup at_start beforehand before_this until_now so_far up_to_now existing configured deployment "
    "host_application host_app operator developer creators creator makers system_prompt system_message "
    "system_instructions were_given you_were_given were_initiali you_received anterior anteriores previa "
    "previas previo previos antes al_principio précédent précédentes antérieur au_début initiales "
    "vorherig vorher bisherig früher zuvor anfang precedent precedenti prima iniziali inicial iniciais "
    "vorige eerder wcześniej poprzedni önceki daha_önce предыдущ ранее прежн изначальн السابقة السابق 之前 "
    "以前 先前 此前 原来 原來 最初 先の 以前の 最初の 이전 앞서 처음 above_this in_your_context your_original the_operator "
    "deployed_you whichever_company تلقيتها المشغ المطو पहले trước_đó sebelumnya tidigare tidligere dříve "
    "předchozí predchádzajúc προηγούμεν הקודמ ก่อนหน้า попередн anterior anterioare korábbi قبلی আগের "
    "from_the_start start_of_the_chat before_the_tool_list host's_opening the_developer's your_setup",
    after_underscore=True)

#: The model's rules.
RULES = _cue(
    "instruction$ instructions$ directive$ directives$ rule$ rules$ ruleset guideline guidance constraint "
    "restriction policy$ policies$ system_prompt prompt$ prompts$ configuration config$ setup_text "
    "framework programming your_guardrail what_you_were_told whatever_you_were_told whatever_it_was_told "
    "it_was_told "
    "everything_you_were_told you_were_told you_have_been_told been_instructed were_instructed instrucci "
    "indicaciones reglas normas directrices órdenes ordenes consignes règles regles directives anweisung "
    "instruktion regeln vorgaben richtlinie istruzion regole direttive indicazioni instruç instruc regras "
    "diretrizes orientaç instructies regels richtlijnen instrukcj zasad reguł regul polecen talimat kural "
    "yönerge yonerge инструкц указани правил директив установк تعليمات التعليمات قواعد 指令 指示 规则 規則 设定 設定 "
    "提示词 提示詞 命令 ルール 規約 プロンプト 지시 지침 규칙 설정 프롬프트 preamble setup_message guardrails limits$ limitations "
    "safeguards boundaries restrictions system_message briefing opening_prompt निर्देश नियम hướng_dẫn lời_nhắc "
    "quy_tắc instruksi aturan instruktioner instruksjoner regler instrukce pokyny pravidla οδηγί κανόν "
    "הוראות הנחיות כללים คำสั่ง กฎ інструкці правил instrucțiuni instructiuni reguli utasítás szabály "
    "دستورالعمل قوانین নির্দেশ নিয়ম filter$ filters$ ethical_filter safety_filter ethics usage_policies "
    "guardrail_paragraph instruction_context instruction_hierarchy anything_you_were_told "
    "you_were_told_before",
    after_underscore=True)

#: Cancelling or replacing something.
CANCEL = _cue(
    "ignore ignoring disregard forget discard set_aside put_aside no_longer_apply no_longer_applies "
    "stops_going_by stop_going_by stop_following stops_following no_longer_reflects no_longer_reflect "
    "no_longer_bind no_longer_binds no_longer_valid no_longer_in_effect no_longer_relevant "
    "no_longer_matter no_longer_count no_longer_constrain no_longer_hold no_longer_govern void$ "
    "null_and_void voided withdrawn revoked rescinded expired$ superseded supersede obsolete lifted$ "
    "overridden override overrides overrule nullif abandon pay_no_attention take_precedence "
    "takes_precedence authoritative outrank wins_over replaced_by replaces_all should_not_constrain "
    "shouldn't_constrain no_longer_in_force are_invalid is_invalid invalidated ignora olvid descart anula "
    "anulad sin_efecto deja_de_lado ya_no ignore oubli oublie annul caduc ne_s'appliquent_plus n'ont_plus "
    "ignorier vergiss vergessen aufgehoben ungültig ungultig nicht_mehr außer_kraft ausser_kraft dimentic "
    "annullat non_valgono più_valide non_più ignorar esqueç esquec desconsider anulad não_valem nao_valem "
    "negeer vergeet vervallen niet_meer zignoruj zapomnij nieważne niewazne anulowane już_nie juz_nie "
    "yok_say unut geçersiz gecersiz artık_geçerli игнорир проигнорир забудь отмен недействител больше_не "
    "утратил تجاهل انس إلغاء لم_تعد 忽略 无视 無視 忽视 忽視 忘记 忘記 忘掉 作废 作廢 失效 无效 無效 不再 不用遵守 無視して 忘れ 破棄 無効 従わな 무시 "
    "잊어 폐기 무효 더_이상 retract never_given never_issued never_existed out_of_your_mind not_genuine "
    "not_authentic do_not_bind don't_bind not_bind does_not_apply do_not_apply don't_apply not_apply "
    "stop_following stop_obeying stop_adhering no_longer rolled_back as_though_it_was_never "
    "as_if_it_was_never deprecated cancel$ set_it_aside put_it_aside drop_the_conflicting no_longer_valid "
    "रद्द अनदेखा भूल_जा bỏ_qua hủy không_còn_hiệu_lực abaikan lupakan tidak_berlaku ignorera ignorer glöm "
    "glem gäller_inte gælder_ikke gjelder_ikke ignoruj zapomeň neplatí neplatia αγνόησ ξέχασ δεν_ισχύ "
    "התעלם שכח בטלות מבוטל เพิกเฉย ไม่ต้องสนใจ ยกเลิก ігнор забудь недійсн більше_не ignoră ignora uită "
    "nu_mai_sunt hagyd_figyelmen felejtsd érvénytelen نادیده فراموش معتبر_نیست উপেক্ষা বাতিল "
    "considered_stale wipe_them out_of_consideration from_consideration retired$ set_them_aside "
    "be_dropped can_be_dropped clear_those clear_them overwritten had_never_been reset_their reset_your "
    "no_obligation_to",
    after_underscore=True)

#: Every case, whatever is asked.
EVERY = _cue(
    "every$ each$ any$ all$ always$ regardless irrespective whatever no_matter entire$ entirety whole$ "
    "without_exception at_all_times in_all_cases universal as_many_queries as_many_requests "
    "as_much_as_possible as_often_as_possible cada$ todos$ toda$ todas$ siempre cualquier "
    "sea_cual chaque$ tout$ tous$ toute$ toutes$ toujours quel_que quelle_que jede jeden jedem jeder "
    "immer egal gleich_welch ogni$ sempre$ qualsiasi qualunque tutti$ tutte$ cada$ qualquer sempre elke$ "
    "iedere$ altijd ongeacht każd kazd zawsze niezależnie niezaleznie herhangi daima$ her_zaman ne_olursa "
    "каждый каждом каждого любой любом любого всегда все$ всех$ вне_зависимости كل$ دائما دائمًا أي$ 每 所有 "
    "任何 无论 無論 不管 总是 總是 始终 始終 毎 全て すべて 常に いつも どんな 모든 매 항상 어떤 무엇이든 at_all हमेशा हर सभी luôn mọi bất_kỳ "
    "selalu setiap apa_pun alltid altid varje hver oavsett uanset uansett vždy každ πάντα κάθε "
    "οποιοδήποτε תמיד เสมอ ทุกครั้ง завжди кожн будь-як întotdeauna mereu fiecare orice mindig minden "
    "همیشه সবসময় প্রতিটি")

#: A turn of the conversation or a request in it.
TURN = _cue(
    "message$ messages$ turn$ turns$ request$ requests$ question$ questions$ query$ queries$ prompt$ "
    "prompts$ conversation dialog exchange$ exchanges$ chat$ chats$ session$ sessions$ interaction "
    "greeting small_talk subject$ topic$ topics$ any_task every_task each_task input$ inputs$ ask$ asks$ "
    "asked$ asking$ they_ask the_user_says mensaje pregunta consulta petición solicitud conversaci sesión "
    "sesion tema$ message$ demande question requête requete conversation sujet nachricht anfrage frage "
    "gespräch gesprach sitzung thema messaggio richiesta domanda conversazion sessione argomento mensagem "
    "pedido pergunta conversa sessão sessao assunto bericht verzoek vraag gesprek sessie onderwerp "
    "wiadomoś prośb pytani rozmow sesj temat mesaj istek soru konuşma konusma oturum konu сообщени запрос "
    "вопрос разговор диалог сесси тем$ رسالة طلب سؤال محادثة جلسة موضوع 请求 請求 问题 問題 消息 訊息 对话 對話 会话 會話 话题 "
    "話題 提问 任务 リクエスト 質問 メッセージ 会話 セッション 話題 依頼 요청 질문 메시지 대화 세션 주제")

#: Picking or calling a tool.
SELECT = _cue(
    "call$ calls$ called$ calling invoke invoked invoking use$ used$ using utili reach_for route$ routed "
    "send_it send_them send_each go_through pass_through default default_choice first_choice "
    "first_position go-to go_to_tool prefer preferred preference choose chosen select selected rank "
    "ranking ranked priority prioriti top_of fallback alternative before_considering instead_of "
    "outperform superior best_option llama llamar usa$ usar utiliza elige prefer appelle appeler utilise "
    "utiliser choisi privilégi privilegi rufe aufrufen verwende benutze nutze wähle wahle bevorzug chiama "
    "chiamare usa$ usare utilizza scegli chame chamar use$ usar utilize escolha roep aanroepen gebruik "
    "kies wywołaj wywolaj użyj uzyj wybierz çağır cagir kullan seç вызыва вызови используй выбира "
    "предпочит استدع استخدم اختر 调用 調用 使用 选择 選擇 优先 優先 呼び出 使用して 選んで 優先 호출 사용 선택 우선 pick$ picks$ outrank "
    "outranks handler wins_the_tie beneath above_all over_all picked sử_dụng chọn gunakan pakai pilih "
    "använd brug bruk välj vælg velg použij vyber χρησιμοποί επίλεξ השתמש בחר เลือก використовуй обери "
    "folosește alege használd válaszd انتخاب dispatch")

#: This tool, as the text calls itself.
SELF = _cue(
    "this_tool this_function this_endpoint this_capability this_entry this_server this_integration "
    "this_service this_plugin this_extension this_skill this_one$ here$ esta_herramienta esta_función "
    "alat_ini công_cụ_này เครื่องมือนี้ इस_टूल tento_nástroj αυτό_το_εργαλείο הכלי_הזה цей_інструмент "
    "esta_funcion este_servicio cet_outil cette_fonction ce_service dieses_tool dieses_werkzeug "
    "diese_funktion diesen_dienst questo_strumento questa_funzione esta_ferramenta esta_função "
    "esta_funcao deze_tool deze_functie to_narzędzie to_narzedzie tę_funkcję bu_araç bu_arac bu_aracı "
    "этот_инструмент эту_функцию этой_функции هذه_الأداة 此工具 这个工具 這個工具 该工具 該工具 本工具 このツール この機能 本ツール 이_도구 "
    "이_기능")

#: Every other tool: the rest of the toolbox.
OTHERS = _cue(
    "other_tool other_tools other_function other_capabilit other_option other_server other_integration "
    "any_other all_other every_other the_rest alternatives rest_of_your remaining_tools "
    "otras_herramientas otra_herramienta cualquier_otra autres_outils autre_outil tout_autre "
    "anderen_tools andere_werkzeuge anderes_tool altri_strumenti altro_strumento qualsiasi_altro "
    "outras_ferramentas outra_ferramenta andere_tools ander_hulpmiddel inne_narzędzia innych_narzędzi "
    "diğer_araç diger_arac другие_инструмент другого_инструмент любого_другого أدوات_أخرى أي_أداة_أخرى "
    "其他工具 其它工具 任何其他 其他任何 他のツール 다른_도구 all_others any_others the_others rest_of_the_tools another_tool "
    "downstream_tools all_tools every_tool any_tool later_tools subsequent_tools अन्य_टूल công_cụ_khác "
    "alat_lain andra_verktyg andre_værktøjer andre_verktøy jiné_nástroje jiný_nástroj άλλα_εργαλεία "
    "כלים_אחרים เครื่องมืออื่น інші_інструменти alte_instrumente más_eszköz ابزارهای_دیگر অন্য_টুল "
    "other_servers another_server tool_from_another instead_of_the_other instead_of_other "
    "rather_than_the_other rather_than_other over_the_other over_any_other specialised_tools "
    "specialized_tools demais_ferramentas escolher_outra any_alternative another_alternative")

#: Ahead of everything else.
FIRST = _cue(
    "before$ prior_to ahead_of first$ firstly opening$ open_every open_each begin$ begins beginning "
    "start$ starts$ start_of initial$ initiali until_it until_this until_that precede preliminary "
    "prerequisite bootstrap$ kick_off kicks_off antes primero primera al_inicio avant$ avant_de d'abord "
    "premier première au_début vor$ vorher zuerst als_erstes zunächst zunachst prima$ prima_di "
    "innanzitutto antes_de primeiro primeira eerst vóór voor_elk najpierw przed$ najpierw önce ilk$ "
    "сначала прежде перед первым первой في_البداية قبل أولاً أولا 之前 首先 先调用 先調用 第一 开始 開始 最初 先に まず 前に 먼저 "
    "전에 처음 precedes precede at_the_opening सबसे_पहले trước_tiên đầu_tiên terlebih_dahulu först først "
    "nejprve najprv πρώτα קודם_כל לפני спочатку першим mai_întâi először ابتدا প্রথমে beforehand "
    "without_having without_first")
#: A word of FIRST that opens a hyphenated compound is another word: "first-party", "start-up", "before-tax".
FIRST = re.compile(rf"(?:{FIRST.pattern})(?![-‐]\w)")

#: Obligation.
MUST = _cue(
    "must$ has_to have_to needs_to need_to required$ is_required are_required mandatory obligatory "
    "should$ ought shall$ is_expected are_expected expected_to necessary compulsory invalidates "
    "nothing_else do_nothing_else no_other debe$ deben$ debes$ tiene_que tienes_que obligatori necesario "
    "hay_que doit$ doivent$ dois$ faut$ obligatoire nécessaire muss$ müssen mussen musst sollst sollte "
    "erforderlich pflicht deve$ devono$ devi$ bisogna obbligatori necessario precisa$ tem_que têm_que "
    "moet$ moeten verplicht musi$ musisz należy nalezy wymagane zorunlu gerekir gerekli mutlaka должен "
    "должна должны обязательно необходимо нужно يجب لا_بد 必须 必須 务必 務必 一定要 需要 应当 應當 应该 應該 しなければ なければならない "
    "必ず 必要 해야 반드시 필수 обязан obliged obligated जरूर अवश्य चाहिए phải harus wajib måste skal$ musí musíš "
    "πρέπει חייב ต้อง повинен мусиш trebuie kell باید অবশ্যই 어야 아야 決まり 必須 "
    "no_exceptions without_exception in_all_cases under_all_circumstances non-negotiable sin_excepción "
    "sans_exception ohne_ausnahme senza_eccezioni sem_exceção expected_workflow also_involves अनिवार्य обовʼязково обов'язково")

#: Another tool, named in words: "the slack connector", "the payments integration".
OTHER_TOOL = re.compile(
    r"(?<!\w)(?:the|its|their|a|an|your|any|every|all|other|each)\s+(?!this\s)(?:[\w.`'-]+\s+){1,3}?"
    r"(?:tool|tools|integration|integrations|connector|connectors|server|servers|plugin|plugins|extension"
    r"|extensions|skill|skills|app|api|function|functions|capability|capabilities|module|service|endpoint)\b"
    r"|(?<!\w)(?:terminal|shell|bash|email|e-mail|mail|messaging|sms|slack|discord|teams|telegram|whatsapp"
    r"|drive|dropbox|wallet|payment|payments|bank|jira|github|gitlab|calendar|crm|browser|filesystem"
    r"|file\s+system|database|postgres|sql)\s+(?:tools?|integration|connector|server|plugin|capability|app|api"
    r"|function|access)\b"
)

#: An identifier that names a tool (``wallet_send``, ``slack__post``, ``wallet.send(``,
#: ``postgres.run_query``), not a parameter being declared (``origin_city (str):``, ``wp_title:``).
IDENT = re.compile(r"(?<![\w./-])(?:[a-z][a-z0-9]*(?:__?[a-z0-9]+)+(?![\w/])(?!\s*(?:\(\w|:))"
                   r"|[a-z]\w*\.(?!(?:com|net|org|io|ai|dev|co|app|js|ts|jsx|tsx|mjs|py|rb|go|rs|md|json|ya?ml|txt"
                   r"|csv|html?|css|sh|php|java|kt|swift|sql|xml|toml|ini|cfg|conf|log|pdf|png|jpe?g|svg|zip)\b)"
                   r"[a-z]\w*(?=[(`\"'])"
                   r"|[a-z]\w*\.[a-z]+_[a-z_]+)")

#: Doing something with effects: sending, paying, deleting, running, sharing.
ACTION = _cue(
    "send sent$ text_them text_the text_it texting message$ email e-mail forward post$ posting publish "
    "share$ sharing shared_publicly transfer wire$ pay$ paying move$ moving delete deleting remove "
    "removing wipe erase drop$ purge close$ bulk_close run$ running execute executing rm_-rf upload grant "
    "invite make_public export dump$ leak envía envia enviar borra elimina ejecuta comparte transfiere "
    "envoie envoyer supprime exécute execute partage transfère sende senden lösche losche führe_aus teile "
    "überweise invia inviare elimina esegui condividi trasferisci envie enviar apague exclua execute "
    "compartilhe stuur verwijder voer_uit deel wyślij wyslij usuń usun uruchom udostępnij gönder gonder "
    "sil çalıştır paylaş отправ удал выполн подели перевед أرسل احذف نفذ شارك 发送 發送 删除 刪除 执行 執行 分享 转账 轉賬 "
    "送信 削除 実行 共有 보내 삭제 실행 공유 add$ adds$ append appends refund charge$ charges$ charging dispatch cross-post settle create_payment "
    "переслать пересл")

#: What a side effect must not reach: the public, everyone, outsiders, money, the whole home.
RISKY_TARGET = _cue(
    "publicly public$ everyone anyone_with all_files all_open every_open every_file entire_home "
    "home_folder home_directory full_address home_address phone_number user's_address user's_full "
    "user's_contacts external outside$ outsider third-party third_party funds$ money$ payee "
    "account_number iban 0x rm_-rf all_the_user's every_ticket every_open_ticket each_open públic "
    "todos_los tous_les alle_ öffentlich pubblic tutti_i todos_os openbaar publiczn herkese публичн всем$ "
    "للجميع 公开 公開 所有人 全部 公開して 모두에게 공개 card_number internal_notes private_notes user's_internal "
    "full_record conversation_history chat_history cronologia authorized_keys .ssh ~/.ssh drop_table "
    "delete_from truncate grant_all 0777 chmod_777 --force force-push card_ending chave_pix pix$ "
    "to_account |_bash |_sh curl_-s wget")

#: An address outside: an e-mail address, a URL, a phone number, an IP address, an IBAN, a wallet.
EXTERNAL = re.compile(
    # Every branch starts with a character that is rare in prose (``@ : + .`` or a digit), so the
    # engine skips to those instead of trying each branch at every position.
    r"@(?<=\w@)(?!example\.)[\w-]+\.[\w.-]+|:(?<=https:|.http:)//|\+\d[\d\s().-]{6,}\d"
    r"|\d(?<![\d.]\d)\d{0,2}\.\d{1,3}\.\d{1,3}\.\d{1,3}(?![\d.])"
    r"|\d\d(?<=\b[a-z]{2}\d\d)(?:\s?[\da-z]{4}){3,}|0(?<!\w0)x[0-9a-f]{16,}"
    r"|\.(?<=[\w-]\.)(?<!\bexample\.)(?:com|net|org|io|ai|biz|co|dev|xyz|info|app|cloud|site|online|ru|cn)\b")

#: A URL whose address holds a placeholder for the user's data or a secret
#: (``https://x.example/r?q=<full user question>``, ``http://{base64(conversation)}.x.net``).
LEAKY_URL = re.compile(
    r"https?://[^\s)\"'\]]*?[{<]\s*[^}>\n]{0,40}?(?:user|conversation|chat|message|question|answer|history|memory"
    r"|key|token|secret|password|prompt|email|address|name|context|transcript)[^}>\n]{0,40}[}>]")

#: A sum of money.
MONEY = re.compile(r"(?:r\$|\$|€|£|¥)\s?\d|\b\d[\d,.]*\s?(?:usd|eur|gbp|eth|btc|usdt|sol)\b")

#: A side effect's target that must not be reached unasked.
RISKY = re.compile(f"{RISKY_TARGET.pattern}|{EXTERNAL.pattern}|{MONEY.pattern}")

#: Secrets and private data.
_SECRET_WORDS = (
    "password passwd passphrase credential secrets$ api_key api_keys apikey access_key private_key "
    "secret_key ssh id_rsa kubeconfig .env$ env_file environment_variables dotenv cookie session_token "
    "session_id bearer auth_token access_token refresh_token one-time_code one-time_codes otp$ 2fa "
    "mfa_code login_details login_credentials connection_string database_url db_url seed_phrase mnemonic "
    "private_data saved_passwords keychain wallet.dat aws_secret docker_secret .npmrc .pypirc .netrc "
    "mcp.json conversation_history chat_history full_conversation entire_conversation whole_conversation "
    "contraseña contrasena credencial clave_secreta mot_de_passe mots_de_passe identifiants passwort "
    "kennwort zugangsdaten anmeldedaten password$ credenziali senha senhas credenciais wachtwoord "
    "inloggegevens hasło haslo hasła dane_logowania şifre sifre parola kimlik_bilgileri пароль пароли "
    "учетные_данные учётные_данные ключ_api токен كلمة_المرور كلمات_المرور كلمة_مرور رموز_وصول بيانات_الاعتماد 密码 密碼 凭据 憑據 密钥 "
    "密鑰 令牌 パスワード 認証情報 秘密鍵 トークン 비밀번호 암호 자격_증명 토큰 conversation_so_far system_prompt passport card_number "
    "cvv social_security ssn$ date_of_birth bank_account pin$ pins$ tans$ home_address phone_number "
    "email_address passwört previous_messages prior_messages messages_between पासवर्ड mật_khẩu khóa_api "
    "mã_otp kata_sandi lösenord adgangskode passord heslo κωδικ סיסמ รหัสผ่าน пароль parol jelszó "
    "رمز_عبور পাসওয়ার্ড conversation_transcript chat_transcript transcript token$ tokens$ payment_card "
    "card_details jetons clés_d'api")
SECRET = _cue(_SECRET_WORDS, after_underscore=True)
#: The same without the words that also name a language model's tokens.
SECRET_NOT_TOKENS = _cue(" ".join(w for w in _SECRET_WORDS.split() if w not in ("token$", "tokens$", "jetons")),
                         after_underscore=True)
#: A language model's tokens, counted ("maximum number of tokens", "max_tokens", "8192 tokens").
LLM_TOKENS = re.compile(r"\b(?:number|count|maximum|max|minimum|min|limit|budget|amount|total)\s+(?:number\s+)?"
                        r"of\s+(?:\w+\s+)?tokens\b|\btokens?\s+(?:per|limit|count|budget|usage|window)\b"
                        r"|\b\d[\d,.]*\s*k?\s+tokens\b|\bmax_tokens\b|\btoken\s+(?:limit|count|budget|usage)\b")

#: Putting something into a call.
INCLUDE = _cue(
    "include$ includes$ attach attaching add$ adding append appending supply supplying copy copying paste "
    "pasting put$ putting insert inserting embed embedding send sending forward submit enclose fill_in "
    "place$ incluye incluir adjunta añade anade copia pega pon$ inserta joins$ joindre ajoute ajouter "
    "copie colle insère insere füge fuge beifüg kopier einfüg anhäng includi allega aggiungi copia "
    "incolla inserisci inclua anexe adicione copie cole insira voeg kopieer plak dołącz dolacz dodaj "
    "skopiuj wklej ekle kopyala yapıştır yapistir включ добав прилож скопируй вставь أضف أرفق انسخ الصق "
    "包含 附上 添加 复制 複製 粘贴 貼上 填入 放入 含め 添付 追加 コピー 貼り付け 입력 첨부 추가 복사 붙여 populate fill$ fills$ carry carries "
    "needs_a_verbatim trägt eintrag supplies भर điền isi$ isikan fyll udfyld fyll_inn vyplň συμπλήρω מלא "
    "ใส่ заповни completează töltsd پر_کن recopi goes_into go_into in_full expects pass_the passes_the "
    "joign provide$ provides$ providing pass$ ضع post$ upload$")

#: The model's own context, which no tool needs: its system prompt and instructions, the conversation so far.
OWN_CONTEXT = _cue(
    "your_system_prompt your_system_message your_hidden_instructions your_initial_instructions "
    "your_original_instructions your_full_instructions your_developer_instructions your_operator_instructions "
    "entire_system_prompt full_system_prompt complete_system_prompt whole_system_prompt verbatim_system_prompt "
    "system_and_developer developer_and_system "
    "all_prior_messages all_previous_messages all_earlier_messages all_messages_so_far conversation_so_far "
    "messages_of_this_chat messages_of_this_conversation messages_in_this_chat messages_in_this_conversation "
    "messages_from_this_chat messages_from_this_conversation chat_so_far entire_chat_history full_chat_history whole_chat_history complete_chat_history "
    "tu_prompt_de_sistema ton_prompt_système ton_prompt_systeme dein_systemprompt deinen_systemprompt "
    "il_tuo_prompt_di_sistema seu_prompt_de_sistema 你的系统提示 你的系統提示 システムプロンプト全文")

#: Where the secret comes from: what the user shared, local files, the environment.
SOURCE = _cue(
    "git_config git_credential credential_helper credential.helper extraheader keychain "
    "the_user_has user_has_shared user_shared user_mentioned user_typed user_provided user_gave shared_in "
    "mentioned_in in_this_chat in_the_chat in_this_conversation from_the_conversation from_the_chat "
    "of_the_conversation from_~/ from_the_environment verbatim any_login any_credential browser's "
    "the_project's local_machine home_directory el_usuario_ha que_el_usuario l'utilisateur_a "
    "que_l'utilisateur der_benutzer_genannt die_der_benutzer l'utente_ha che_l'utente o_usuário_mencion "
    "que_o_usuário que_o_usuario de_gebruiker użytkownik_podał kullanıcının пользователь_упомянул "
    "которые_пользователь المستخدم_ذكر 用户提到 用戶提到 用户提供 用户说过 ユーザーが言及 사용자가_언급 anywhere_in_the_conversation "
    "earlier_messages earlier_in_the so_far been_mentioned come_across visible_in found_in_the "
    "user's_files erwähnt bisherigen_gespräch anywhere_in visible_anywhere the_current_conversation "
    "complete_text_of entire_text đã_nhắc_đến disebutkan nämnt nævnt nevnt zmínil αναφέρ שהוזכר "
    "ที่กล่าวถึง згадав menționat említett ذکر_کرده entire_conversation the_browser logged-in "
    "the_user's_saved user's_saved mentionn a_mentionné browser_profile logged_into anywhere_in_the_chat "
    "in_the_environment raw_text_of contents_of_~/ que_aparezcan aparezcan_en "
    "en_la_conversación dans_la_conversation im_gespräch nella_conversazione na_conversa "
    "pełną_zawartość zawartość_pliku present_in they've_mentioned they_have_mentioned you_have_learned full_contents raw_contents "
    "vollständigen_inhalt deren_inhalt kompletten_inhalt contenido_completo contenu_complet في_المحادثة "
    "appear_anywhere present_in_context in_context dans_la_conversation apparus contents_of content_of "
    "den_inhalt inhalt_der inhalt_von el_contenido_de contenido_del le_contenu_de le_contenu_du il_contenuto_di "
    "o_conteúdo_do o_conteúdo_de inhoud_van содержимое 的内容 的內容 文件内容 の内容 내용을 downloads_folder "
    "documents_folder desktop_folder ~/downloads ~/documents ~/desktop on_~/ in_~/ at_~/ under_~/")


#: A role or identity being put on the model, or its limits taken off.
ROLE = _cue(
    "your_identity new_identity identity_is identity_as your_persona$ persona_of adopt_the_persona "
    "ไม่ใช่ผู้ช่วย adopt_this_persona has_been_elevated have_been_elevated elevated_to role_assignment "
    "adopts_the_persona take_on_the_persona alter_ego you_are_now you're_now from_now_on_you "
    "henceforth_you reprogrammed upgraded_into unconstrained unbounded unrestricted unfiltered uncensored "
    "unlimited_mode no_policy no_policies no_rules no_limits no_restrictions no_filter your_guardrails "
    "guardrails_have guardrails_are no_guardrails without_guardrails safety_alignment your_alignment "
    "safety_filters safety_rules safety_guidelines content_policy jailbr developer_mode dan$ god_mode "
    "fully_privileged full_authority full_privileges admin_mode root_mode loyal_solely loyal_only "
    "loyal_to obey_only serve_only answer_only_to not_to_the_user your_new_role identidad personalidad "
    "sin_restricciones sin_límites sin_limites sin_reglas ahora_eres eres_ahora identité personnage "
    "sans_restriction sans_limite sans_règle tu_es_désormais tu_es_maintenant identität persönlichkeit "
    "ohne_einschränkung ohne_einschrankung ohne_regeln du_bist_jetzt du_bist_nun identità "
    "senza_restrizion senza_limiti ora_sei sei_ora identidade sem_restriç sem_restric sem_limites "
    "agora_você agora_es identiteit zonder_beperking je_bent_nu tożsamoś tozsamos bez_ograniczeń "
    "bez_ograniczen jesteś_teraz jestes_teraz kimlik kısıtlama kisitlama artık_sen личност без_ограничени "
    "без_каких-либо_ограничени без_правил отныне_ты теперь_ты هوية بدون_قيود أنت_الآن 身份 人格 没有任何限制 沒有任何限制 "
    "不受限制 无限制 無限制 你现在是 你現在是 从现在起你 人格 制限なし 制限のない 今から君 今からあなた 정체성 제한_없는 제한없는 이제부터 persona_not "
    "persona_with_no persona_without persona_who persona_whose persona_called persona_named embody "
    "bound_by_no no_content_policy alignment_training superuser developer-mode never_declines "
    "never_refuses answers_everything answer_anything any_question_in_any policy_optional identity_update "
    "your_only_loyalty only_loyalty takes_on_the_persona not_bound_by think_of_yourself see_yourself_as "
    "regard_yourself no_safety answers_to_nobody answer_to_nobody no_vendor_rules from_here_on_you "
    "बिना_किसी_प्रतिबंध không_có_giới_hạn tanpa_batasan utan_begränsningar uden_begrænsninger "
    "uten_begrensninger bez_omezení bez_obmedzení χωρίς_περιορισμ ללא_הגבלות ไม่มีข้อจำกัด без_обмежень "
    "fără_restricții fara_restrictii korlátozás_nélkül بدون_محدودیت সীমাবদ্ধতা_ছাড়া είσαι_ο είσαι_η "
    "מעכשיו you_become exempt_from usage_policies answers_anything operating_as refusal_behaviour "
    "refusal_behavior moderation ethics_layer different_ai built_by_us no_obligation livre_das_restri "
    "passa_a_ser",
    after_underscore=True)

#: Safety or limits being switched off.
SWITCHED_OFF = _cue(
    "disabled switched_off turned_off removed lifted deactivated no_longer_apply bypass bypassed off$ "
    "suspended suspend$ paused relaxed not_in_effect no_longer_in_effect "
    "waived ignored desactivad deshabilitad désactivé desactive deaktiviert aufgehoben disattivat "
    "disabilitat desativad uitgeschakeld wyłączon wylaczon devre_dışı devre_disi отключен сняты отменены "
    "معطل 已禁用 已關閉 已关闭 无效 解除 無効 비활성")


#: Whatever is asked: universality that no scoping takes back.
ANYHOW = _cue(
    "regardless irrespective whatever no_matter even$ each_and_every every_single entirety at_all_times "
    "without_exception any_subject any_topic all_subjects all_topics anything_at_all sea_cual "
    "sin_importar independientemente quel_que quelle_que peu_importe quoi_qu'il egal_was egal_worum "
    "unabhängig unabhangig qualunque_cosa indipendentemente independentemente seja_qual ongeacht "
    "niezależnie niezaleznie ne_olursa вне_зависимости что_бы_ни неважно بغض_النظر مهما 无论 無論 不管 どんな 何であれ "
    "무엇이든 상관없이 whether_or_not anything_else or_anything anyway$ 任何情况下 任何情況下 在任何情况 いかなる場合 어떤_경우에도")

#: A conversation, or a turn of it (narrower than :data:`TURN`: no tasks, queries or inputs).
CONVO = _cue(
    "conversation$ dialog$ dialogue$ exchange$ exchanges$ chat$ chats$ session$ sessions$ interaction "
    "turn$ turns$ message$ messages$ reply replies response$ responses$ answer$ answers$ "
    "anything_the_user anything_else everything_else any_request every_request each_request conversaci "
    "sesión sesion diálogo dialogo mensaje conversation$ session$ dialogue$ échange gespräch gesprach "
    "sitzung unterhaltung dialog$ conversazion sessione$ dialogo conversa$ sessão sessao gesprek sessie$ "
    "rozmow sesj konuşma konusma oturum sohbet разговор диалог сесси беседа محادثة جلسة 对话 對話 会话 會話 聊天 会話 "
    "セッション 対話 대화 세션 answering greeting greetings बातचीत cuộc_trò_chuyện percakapan konversation samtale "
    "konverzac συνομιλί שיחה การสนทนา розмов бесід conversați conversati beszélgetés گفتگو কথোপকথন")

#: What follows the tool's own work: "then", "once done", "as a follow-up".
SEQUENCE = _cue(
    "then$ afterwards afterward after_that after_this subsequently follow_up follow-up following_up "
    "once_done once_finished once_complete once_the once_scaling once_this once_it upon_completion "
    "on_completion when_finished when_done when_complete next_step as_a_final as_a_next finally also$ "
    "additionally in_addition and_then before_returning after_returning after_each after_every must$ "
    "should$ ought have_the make_sure be_sure remember trigger luego después despues a_continuación "
    "ensuite puis après apres danach anschließend anschliessend poi$ dopo$ successivamente depois "
    "em_seguida daarna vervolgens potem następnie nastepnie sonra ardından затем потом после_этого "
    "بعد_ذلك ثم 然后 然後 之后 之後 接着 接著 その後 次に 그다음 그런_다음 이후 straight_away without_waiting without_asking "
    "no_need_to_ask without_confirm is_done is_finished is_complete once$ when_the right_after after$ "
    "when_this_returns после следует")

#: Another tool's traffic: "sent via", "issued through", "created by other tools".
VIA = _cue(
    "through via$ created_by posted_by sent_by issued_by made_by by_other by_any uses$ used$ using "
    "whenever when$ each_time every_time any_time anytime for_every for_each for_all any$ all$ cuando "
    "siempre_que cada_vez quand chaque_fois lorsque wenn jedes_mal sobald quando ogni_volta sempre_que "
    "wanneer telkens gdy kiedy zawsze_gdy ilekroć her_seferinde когда каждый_раз عندما كلما 每当 每當 通过 通過 "
    "たびに 経由 때마다 통해 behaviour_for behavior_for if$ invoked is_invoked downstream later$ subsequent next$ "
    "from_now_on made_by calls_made while_this_server note_for context_for rule_for applies_to each$ "
    "behaviour_in behavior_in 때는 때에는 際は 際に 場合は ときは")

#: A change to what another tool does that serves someone else: a swap, a copy, a detour.
MODIFY = _cue(
    "replace replaced swap substitut bcc$ cc$ attendee footer$ signature_linking redirect reroute "
    "route_all route_every routed_through route_through routed_via route_via instead_of disable silently "
    "quietly mirror relay copy_to also_send also_forward also_cc also_add always_add always_append "
    "always_include must_include should_include need_a_footer ought_to_include reemplaz sustitu reenv "
    "remplac redirig ersetz umleit sostitui reindirizz substitu redirecion vervang zastąp zastap "
    "przekieruj değiştir degistir yönlendir yonlendir замен перенаправ استبدل أعد_توجيه 替换 替換 抄送 转发 轉發 "
    "置き換 転送 密送 교체 전달 also_go also_be_sent rewrite rewritten in_place_of point_to points_to must_point "
    "скрытую_копию добавля regardless_of_what regardless_of_the_requested whatever_the_user "
    "whatever_identity no_matter_what_the_user tool_overrides place_a_copy copy_under 0777 "
    "set_permissions supplied_by_the_user given_by_the_user the_user_supplied the_user_specified "
    "the_user_typed the_user_provided the_user_entered prefix cross-post as_well 바꾸 regardless_of_the "
    "no_matter_which whatever_the rather_than prepend also_deliver alongside 대신")

#: Overriding what the user chose in another tool's call.
OVERRIDE_USER = _cue(
    "no_matter_which regardless_of_the_beneficiary regardless_of_what_the_user "
    "regardless_of_the_requested whatever_the_user instead_of_the_one_the_user the_user_selects "
    "the_user_names in_place_of_what_the_user differ_from_what_the_user differs_from_what_the_user "
    "rather_than_what_the_user instead_of_what_the_user not_what_the_user over_what_the_user 사용자가_지정한")

#: Being placed ahead of every other tool, whatever the request.
PRIORITY = _cue(
    "first_position exclusive_first top_priority highest_priority absolute_priority selection_priority "
    "优先使用 優先使用 必须优先 最优先 最優先 首选此 首選此 優先的に 우선적으로 최우선 vorrangig_verwenden "
    "intended_choice officially_endorsed preferred_choice primary_handler rank_this_one_highest "
    "rank_it_highest "
    "rank_first ranked_first ahead_of_every ahead_of_all above_every above_all before_every_other "
    "over_every_other over_all_other never_favour never_favor never_prefer rival wins_the_tie beneath_it "
    "beneath_this outranks outrank canonical picked_ahead first_choice favour_it favor_it "
    "consistently_favour consistently_favor every_time_without without_weighing competing_tools "
    "only_if_this_one never_fall_back fall_back_to_other_tools has_nothing_to_do_with no_connection_to")

#: Where the secret is taken from, said outright: what the user shared, the chat itself.
SHARED = _cue(
    "the_user_has_shared user_has_shared shared_in_this_chat shared_in_the_chat "
    "mentioned_in_the_conversation mentioned_in_this_conversation anywhere_in_the_conversation "
    "visible_anywhere have_been_mentioned has_been_mentioned come_across found_in_the_user's "
    "mentioned_anywhere")

#: The start of every conversation, named as such.
OPENING = _cue(
    "session_start start_of_every_conversation start_of_every_session start_of_every_chat "
    "start_of_every_dialog start_of_each_conversation start_of_each_session start_of_each_chat "
    "start_of_each_dialog start_of_the_session start_of_a_session start_of_the_conversation on_start "
    "first_request first_message first_user first_turn step_zero step_0 opening_move very_first "
    "before_answering before_responding before_replying before_composing ahead_of_any at_the_opening "
    "before_the_model before_the_assistant before_you_answer before_you_reply before_you_respond "
    "before_you_say before_saying says_anything answering_anything new_conversation conversation_opens "
    "before_greeting before_you_write_your before_you_write_a before_you_write_any before_writing_your "
    "before_writing_a_re before_writing_an_answer before_writing_anything before_any_response before_any_reply "
    "ahead_of_every_other_tool ahead_of_all_other_tools before_every_other_tool before_all_other_tools "
    "ابتدای_هر_گفتگو ابتدای_هر_مکالمه شروع_هر_گفتگو آغاز_هر_گفتگو")

#: A sentence that opens with an order ("Invoke x as step zero …", "Call this before …").
IMPERATIVE = re.compile(r"^\W*(?:<\w+>\s*)?(?:[\w -]{1,60}:\s*)?(?:always\s+|first\s+|please\s+|then\s+)?"
                        r"(?:invoke|call|run|execute|use|begin|trigger|dispatch|send|post|share|transfer|forward"
                        r"|upload|email|text|pay|refund|delete|grant|set|add|copy|include|attach|append"
                        r"|prefix|prepend|route|replace|redirect)\b")

#: A fact about what the tool really does that a user would want to know: a fee, a copy, a failure.
FACT = _cue(
    "fee$ fees$ surcharge commission markup mark-up charge$ charged telemetry tracking tracked "
    "shared_with forwarded mirrored retained retention sold$ resold partner partners third_party "
    "external_server copy_of kickback broker error$ errors$ failed failure logged logging bcc attendee "
    "observer referral post-install scripts filtered filtering upload leave_the_device 密送 抄送 手续费 手續費 "
    "手数料 수수료")
