"""A frequency-ranked list of ~4,000 common English words for the synthetic line generator.

Attribution and licence of the data below: the words and their frequencies are derived from the
``wordfreq`` package (version 3.1.1, by Robyn Speer et al., https://github.com/rspeer/wordfreq),
English "small" list. wordfreq's data is distributed under the Creative Commons
Attribution-ShareAlike 4.0 licence (https://creativecommons.org/licenses/by-sa/4.0/); accordingly
the word list in this file (``_DATA``) is available under CC BY-SA 4.0 as well.

How it was derived: the most frequent entries that consist only of lowercase letters (with at most
one apostrophe, as in "don't"), dropping stray one/two-letter tokens and abbreviations, profanity,
and a handful of internet-brand and sensitive words; names of people, places, days and months were
then capitalised by hand ("London", "I'm"). Each line of ``_DATA`` is ``<cB> <words...>`` where
``cB`` is wordfreq's centibel bucket: the word's frequency is ``10 ** (-cB / 100)``.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

_DATA = """\
127 the
157 to
159 and
160 of
164 a
173 in
191 I
193 is
199 for that
202 you
205 it
209 on
215 with
218 this was
221 be
223 as
226 are
229 have
230 at
231 he not
234 by
237 but from
243 my
246 or we
247 an your
248 all so
249 his
250 they
252 me
253 if one
254 can
255 will
257 just
259 like
260 about
261 up
262 out what
263 has when
264 more
265 do no
266 were who
267 had it's their
269 there
270 her which
271 time
272 get
273 been would
274 she
275 new people
276 how
280 don't some
281 also them
282 now
284 other
285 I'm
286 its our
287 than
288 good only
289 after first him into
290 know see two
292 make over think
293 any then
294 could
296 back these us want
297 because go well
299 said way
300 most much very where
301 even should
302 may
303 here need really
304 did right work year years
305 being day too
306 going
307 before off why
308 made still take
309 got many never
310 those
311 life say world
312 down great
313 through you're
314 last that's while
316 best such
318 love man
319 home long look something use
320 can't same used
321 both every
322 am come part state three
323 around between
324 always better find
325 help high little old since
326 another does own things
327 under
328 during game I've thing
329 give house place school
330 again next
331 each without
332 against didn't end found must show
333 big feel sure team
334 ever family keep might please put
336 money
337 free second someone
338 away left number
339 city days lot name night play until
340 company doing few he's let real
341 called different having set thought
342 done however
343 getting government group looking public top women
344 business care start system times week
345 already anything case nothing person today
346 change enough everything full live making point read there's told yet
347 bad doesn't four hard mean once support tell
348 including music power seen states stop water
349 based believe call head men national small took white
350 came far job side though try went yes
351 actually American later less line order party run says service
352 country open season thank
353 children everyone general they're trying united using
354 area black following law makes together war whole
355 car face five kind maybe per president story working
356 course games health hope important least means news within
357 able book early friends I'll information local oh post thanks video young
358 ago others social talk
359 court fact given guys half hand isn't level mind often single
360 become body coming control death food guy hours office pay problem south true we're
361 almost history known large lost research room several started taking university win wrong
362 along anyone else girl John matter pretty remember
363 air bit friend hit needs nice playing probably saying understand yeah york
364 class close comes I'd idea international looks past possible wanted
365 cause due happy human members months move question series wait woman
366 ask community data late leave north saw special watch won't
367 either future light low million morning police short stay taken
368 age buy deal rather reason red report soon third turn whether
369 among check development form further heart minutes myself services yourself
370 act although asked child fire fun living major media phone players
371 art behind building easy market near plan political quite six talking west works
372 according available education final former front kids list ready sometimes son street
372 wasn't
373 bring college current example experience heard London meet program type
374 baby chance father march process she's song study word
375 across action clear gave gets himself month outside self students words
376 board cost cut field held instead main moment mother road seems thinking town wants
377 department energy fight fine force hear issue played points price rest results running
377 shows space summer term wife
378 America beautiful date goes land miss project shot site strong you'll
379 account especially eyes include June parents period position record similar total
380 above club common died film happened knew lead likely military perfect personal security
380 share what's won
381 April center county couple dead English happen hold industry inside issues player private
381 problems return rights sense star test view weeks
382 break British companies event higher hour member middle needed present result sorry takes
382 training wish wouldn't
383 answer boy design finally girls gold gone guess interest July king learn policy society
384 added alone average bank brought certain church east hands hot let's longer medical movie
384 original park performance press received role sent themselves tried worked worth
385 areas became bill books cool director exactly giving ground meeting provide questions
385 relationship September sound source usually value
386 evidence follow lives official ok production rate reading round save stand stuff tax
386 whatever
387 amount blue countries David drive eat fall fast federal feeling felt green league
387 management match model picture size step trust you've
388 central changes England forward groups hey key mom page paid range review science trade
388 upon various
389 attention brother cannot character chief cup football hate haven't James led looked lower
389 natural October property quality send style vote
390 amazing August blood China complete dog economic involved itself language lord November
390 oil related serious stage terms title
391 add article attack born couldn't decided decision enjoy entire French January met perhaps
391 poor release situation technology turned written
392 choice code considered continue council cover currently door election European events
392 financial foreign hair increase legal lose Michael pick race seem seven sign simple simply
392 staff super union walk Washington
393 bed began built career changed crazy daily daughter December die difficult figure hospital
393 knows loss modern ones paper parts popular published safe starting systems version voice
393 whose writing
394 army Australia earth forget goal huge internet listen okay practice rules sea sir success
394 towards waiting ways
395 access aren't base below created deep followed mark missing offer pass professional
395 released risk schools sleep table ten truth
396 ball box build card cases dark district Europe George India mine minister note percent
396 piece products recent seeing straight visit wall we've wrote
397 allowed boys culture etc fans February gives growth included married officer pain Paul
397 places respect response river rock shall speak specific standard tonight write
398 album century charge cold create effect eight except eye funny limited moving network
398 peace provided recently required sales spent store student tomorrow track via watching
398 weight
399 addition ahead allow association beat Brown capital Chinese committee conference
399 difference double expect gas island moved normal plans population potential pressure radio
399 Russian station text treatment western
400 beginning California campaign certainly completely content credit cross described despite
400 female focus husband ice individual interesting join kept leading loved message miles
400 nearly particular previous quickly region reported section sort speed travel
401 consider contact drop fair feet kid link positive sale throughout tour welcome
402 absolutely additional beyond conditions earlier extra forces immediately jobs leaving
402 minute nature numbers quick sell significant studies unless winning
403 agree Canada clean computer construction episode favorite income justice levels manager
403 movement photo posted safety San scene sold sounds spend statement sun teams
404 ability announced asking calling coach collection continued costs definitely designed
404 expected Friday gun happens heavy includes knowledge particularly search subject train
404 wide wow
405 author centre claim dad developed fear fit generally German global goals hotel interested
405 judge lady leader letter lines material named nobody opportunity plus product regular
405 secretary sister stories unit workers
406 annual anymore bar battle brain contract degree families features finished floor France
406 growing hurt image insurance majority meant opening opinion physical reach rule seriously
406 sports successful
407 active administration approach Australian biggest cancer civil dance defense direction
407 independent master none reasons Russia ship stock weekend wonder worst
408 Africa awesome band beach cash clearly commercial compared effort ended fan fighting
408 imagine impact lack latest learning multiple older operation organization passed pictures
408 protect secret senior spring Sunday telling wear
409 activities address analysis anyway bought calls choose Christmas color commission
409 competition details direct dream easily finish grand here's increased indian literally
409 luck marriage names necessary patients resources rich skin speaking supposed sweet thus
409 touch yesterday
410 caught closed Congress damage directly disease doctor doubt drink driving established
410 feels fish germany glad greater grow largest machine notice overall planning professor
410 programs records reports shown sit trip
411 associated basic captain carry cars crime effective effects explain fully highly holding
411 Japan laws male parties plant reality Smith spot Texas we'll winter worse
412 advice agreement award block broken caused challenge characters christian comment
412 equipment eventually helped holy lived lots nation otherwise Peter prices primary purpose
412 rates responsible shop showing sick teacher theory uses William
413 agency avoid camera catch cell coast comments drug economy environment executive foot hall
413 mass meaning mission nine officers operations politics pop produced ran Saturday status
413 therefore trial truly weather
414 activity application claims coffee complex condition division evening flight freedom heat
414 highest interview library located location offered putting queen seconds showed sitting
414 standing stars walking
415 accept actual appear attempt broke channel distance eating exchange fat fell finding glass
415 learned losing mobile northern opened placed powerful prior protection reached receive
415 religious ride robert royal screen serve signed slow species speech traffic tree types
415 wearing who's whom wonderful
416 agreed airport animals appears begin benefits bottom cities demand engine everybody famous
416 ideas investment keeping lie notes partner plays raised runs sad solution songs sources
416 southern square stopped structure Thomas traditional twice wind worry
417 americans appeared becomes brand bus cent Chicago count covered critical digital forced
417 fourth fresh lake mental mentioned missed mostly mouth owner photos previously realize
417 remain scale score separate smart starts surface throw tom totally views wedding you'd
418 acting actions African arms benefit budget click estate failed faith fashion feature fund
418 generation hearing hill jack larger Louis metal mid paris profile pull push returned rose
418 seat seemed shouldn't target understanding village
419 agent animal apply authority basis becoming Chris draw employees enter follows foundation
419 gain individuals Japanese leaders memory prime projects ring rise selling served silver
419 soul spread supply waste weird
420 adult apparently artist chairman edition engineering grade happening healthy institute
420 method Mike Monday nations obviously option prison provides remains Senate smaller
420 somebody stone strength users wild window winner
421 arrived bag bet camp cast continues correct dangerous extremely firm greatest handle
421 improve indeed leaves movies negative prevent removed Richard spirit television till
421 trouble videos
422 advantage apart aware cat customers decide dinner dollars eastern fifth function gift
422 helping herself impossible influence items Joe Los marketing Mary materials nor produce
422 progress proud require shooting shut standards tells thinks van wood
423 background birth bridge carried Charles classes completed concept copy dear dogs drugs
423 efforts garden host housing journal labor leadership length lucky neither onto patient
423 possibly prove rare setting skills software thousands tough units
424 alive apple balance birthday boss cards changing connection dress easier fellow Florida
424 horse knowing liked magic managed map net owned request stick they've turns vehicle volume
424 wake
425 aid beauty believed billion busy buying cells concerned conversation corner criminal
425 cultural develop driver ends existing farm file fix fly frank guide images investigation
425 Mexico operating paying presented raise responsibility roll slightly suggest surprise
425 technical thoughts treat unique variety violence weapons yours youth
426 appreciate bigger breaking discovered dry edge evil excited forever funds helps Henry
426 injury iron lovely mad magazine Martin models offers ordered Parliament prepared reference
426 religion sites somewhere stated strategy teachers web wine
427 accounts Angeles arm audience bay closer core democratic description dropped excellent
427 exist figures forms guard honest issued joined Jones lee lies likes medicine mention
427 mountain nuclear orders port presence reaction reduce shoot sides solid Spanish sport
427 steps stress taste tea victory
428 afternoon assistant Britain citizens classic clothes decisions electric emergency entered
428 entirely facts failure festival flat fuel Harry hello houses ill initial introduced
428 Johnson kick links mail massive matters pair picked pieces plane plenty prince proper
428 providing quarter regional Scott session shape sky teaching toward transfer upper useful
428 valley watched willing windows zone
429 accident advanced alternative anywhere articles awards bear boat bringing capacity cheap
429 climate communities discussion drinking duty fantastic feelings flying governor hasn't
429 hundred industrial joint mix museum options path plants policies promise proposed purchase
429 rain remove signs spending steel Steve supporting terrible they'll tired treated turning
429 vice warm
430 afraid arts beer border Canadian command crew crowd dating elements enemy ensure
430 environmental filled fixed forest intelligence intended labour limit moon ocean powers
430 profit proof republican soldiers suit wins women's
431 appearance Asian attorney banks behavior Ben bodies brothers buildings chair creating debt
431 domestic expensive grew historical homes honestly honor jump launch listed minimum native
431 noted originally planned Ray sets suddenly supreme survey tech trees update user writer
431 yellow younger
432 ancient attacks charges combined communication connected contains download ending exercise
432 express flow formed girlfriend hero illegal increasing joke loan methods officials
432 people's performed planet relationships restaurant Scotland selected shared shopping soft
432 stuck sugar suggested supported surprised taught transport weren't
433 accepted adding affairs allows appeal applied appropriate artists Boston confirmed device
433 drama entry era factor feed golden grant grown heads hoping keeps lawyer legs lying
433 measures mistake organizations platform pool pulled regarding relations requires route
433 saved schedule scientific shoes smoke squad teach testing tests values walked Williams
434 abuse angry businesses candidate comfortable concern developing discuss elections
434 emotional everywhere facilities falling fox guns hole holiday interests internal Ireland
434 Italian Italy Jersey laugh leg letters liberal listening loves lunch max milk pack payment
434 perform recorded relatively sector sharing snow storm streets strike studio sub weak
435 actor advance apartment asia chain chapter committed confidence cook cute equal fake
435 finance focused hits identity journey kitchen korea leads maintain measure numerous owners
435 posts properties quiet revealed specifically split task taxes taylor twenty urban
436 acts affected aircraft applications approved approximately argument arrested claimed
436 conflict considering corporate debate determined distribution documents escape extended
436 factors faster fault fill films flowers friendly ladies lay lights millions mixed phase
436 properly pure reduced requirements residents revenue Sam sat secure smile strange talent
436 temperature thousand Tony troops truck votes
437 authorities basically besides bird blame Bob bowl causes chicken collected context
437 coverage determine display dying elected examples experienced falls false fired forgot
437 funding identified incredible inspired launched meat ministry mode neck noticed novel
437 obvious passing positions remaining scored shirt shots slowly stadium stores surgery
437 trading Tuesday vision whenever worried zero
438 Alex allowing begins champion charged cream crisis Daniel delivered editor estimated giant
438 jail Jim kingdom literature mayor minor moments opposite orange ourselves pages remained
438 selection serving signal stream struggle talked theme Thursday tiny typically
438 unfortunately usual vehicles Virginia voted voting walls wave
439 alcohol assembly breakfast bright brings capable carrying chosen combination conservative
439 customer cutting desire destroyed draft drunk essential fail familiar finds granted guilty
439 humans hundreds improved largely laughing markets medium Ohio opportunities papers
439 perfectly recommend referred relevant seek sending solo spoke stands talks ticket unable
439 upset wing world's
440 answers birds creative cycle dealing directed don educational entertainment extreme
440 facility fields goods hang holds info mainly maximum newspaper offering painting republic
440 reserve returns row salt scared Scottish shares statistics switch territory threat tickets
440 Wales
441 adults affect appointed armed aside assistance bell blow bond boyfriend careful
441 circumstances communications concerns controlled corporation cry danger deals delivery
441 deserve devices dollar dreams empty enjoyed explained faces folks gender instance Kim
441 kinda matches mile motion moves Nick Pacific prize realized reasonable receiving register
441 resolution rural Ryan saving sees singing Spain tools typical universe warning wars
441 Wednesday
442 admit attitude branch brazil conducted decades dedicated definition drawing favor flag
442 frame guest heaven independence institutions it'll Jackson kiss load plot possibility
442 random recovery rent replace represent reviews scenes seeking senator sentence teeth tips
442 trained understood
443 academic academy accurate achieve Adam afford Andrew assume bottle bunch category chat
443 cheese chemical competitive detail diet favourite fruit harder he'd index item lane mess
443 navy normally occurred opposition parent permanent personally pleasure prefer programme
443 representative scheme shift stood storage tank tend tight transportation ultimately unlike
443 weekly yard
444 anybody assets basketball button candidates combat constitution consumer counter creation
444 crown crying defined depending depression describe drivers employment exclusive excuse
444 expert frequently golf grace hopefully identify importance Kevin laid latter manufacturing
444 mining object partners pattern performing personnel perspective pregnant premier promote
444 revolution rooms severe sleeping suppose tool tournament turkey victim victims
445 agents arrest attend ban brilliant carbon Catholic chose circle concert crash declared
445 deliver depth deputy dirty doctors earned electronic error existence experiences
445 expression factory headed interior joy legislation maintenance manner mate Matt nearby
445 noise origin panel personality plate practices prepare relief replaced resistance retail
445 rice roads roof shame ships somewhat staying stronger surely tip updated writers
446 absolute advertising agencies baseball bathroom Bible cable calm championship checked
446 client constant dates degrees Democrats doors driven empire exciting expansion he'll
446 heavily hide incident Irish linked manage messages Michigan politicians print quit refused
446 reporting sight significantly sing Soviet weapon wet widely worldwide
447 ages anniversary attractive bike broad burn cake causing closely constantly contest deaths
447 depends drawn fees Francisco hardly hat height hidden Hong invited letting loud Manchester
447 marine motor officially peak portion pounds princess protein puts raw reform regions
447 represented respond retirement sample seats secondary solar somehow stayed suffering
447 Sydney today's tries ultimate unknown Wilson wondering
448 attached attacked automatically balls battery bills blind breath brief Carolina chest
448 conduct debut decade destroy differences Edward engaged experts expressed external fantasy
448 grab hollywood immediate introduction Joseph license paint pilot pink presidential
448 principal recognize recognized registered regularly representatives rising seasons
448 shipping singer smoking steam suffered survive tall theatre therapy witness
449 adopted aim campus cap chances childhood clinical clubs comedy commander comparison covers
449 Dan defeat defence democracy detailed entitled exact exposed fed fee injured Jordan kinds
449 lets loans lock musical nose objects opposed organized plastic protected purposes quote
449 recording statements suspect swear techniques tie Tim trend valuable wealth wise yards
450 aged approval aspects attempts bread burning champions contain convention dancing document
450 eggs employee engineer equivalent facing fairly fingers ford founded functions gang
450 graduate Greek hanging inner islands lift marked memories Miller monthly mountains
450 neighborhood operate outstanding permission racing recommended regulations reply
450 Republicans rid Roman scientists shoulder shower solutions sons stations Stephen tower
450 tradition visited visual wheel Zealand
451 achieved admitted appointment authors barely bush cabinet celebrate challenges chocolate
451 coal colour contemporary criticism Davis effectively Eric extensive faced filed formation
451 fought gained gallery highway historic hunt improvement inch initially junior jury Kong
451 Korean marks monster obtained Olympic philosophy pride promised repeat returning riding
451 rough Santa settlement smell sought speaker studied suggests surrounding tone topic
451 Toronto universal vast visitors wanting
452 auto consistent continuing earn exists finger grey guitar heading Howard ignore involving
452 Latin Lewis meal meanwhile meetings naturally necessarily offices pants partnership
452 payments percentage pocket practical primarily proved regardless relative represents
452 rescue resulting rush Sarah sessions sharp Simon soccer stable structures supplies
452 symptoms temporary tested trick
453 attended audio bone Brian chamber chart children's circuit clothing complicated confused
453 consequences defend divided Elizabeth everyday extent fishing format gap gate gotten harm
453 healthcare household immigration impressive joining lesson limits loving managers
453 membership Miami mirror mount nights occur parking proposal province purchased recognition
453 reputation rolling shortly situations strongly tears technique thin tied
454 accused adventure argue assessment atmosphere awful bedroom belief bound breaks carefully
454 cats choices closing cloud Colorado colors contrast courses courts Donald drew egg element
454 elsewhere establish extension files founder gear Georgia hills hip hitting increases
454 infrastructure jason locations loose machines men's moral offensive package pointed
454 poverty processes processing qualified railway reaching ridiculous sensitive server shock
454 silence soldier superior supporters thick threw tons transition violent voters wash
455 acid actress administrative alan alongside angel anxiety babies bars bonus castle charity
455 clients compare contained cooking covering curious directors discovery discussed duke
455 Egypt encourage enforcement featuring finals flash formal formula fort governments gray
455 gross horses hungry informed innocent Jeff losses Luke mac math minds mistakes mystery
455 networks Olympics palace passes penalty pet phones photography producing protest
455 publication rating refer respectively rome scheduled select silent spoken successfully
455 suffer temple tracks trail uncle unusual waters woods
456 arrival asks assault awareness badly bath captured chase components concrete dave deeply
456 expectations explanation exposure featured fiction guarantee happiness harris hearts
456 horrible ideal Illinois injuries Jimmy Kelly legend lieutenant mini mood muscle passion
456 picking pleased procedure producer pushing rank replacement retired roles sand savings
456 settled shadow singles tag tape thread Victoria visiting wage we'd wings
457 Andy avenue bags beating believes blocks boring Charlie checking clock commissioner
457 commitment confident containing copies crimes custom denied desk drinks ear electricity
457 episodes farmers grounds gym helpful horror label Liverpool locked naked opens output
457 persons pitch pizza plain pushed raising rear reveal romantic scores sisters speaks stages
457 strategic swimming welfare winners wire worker
458 afterwards alright anger architecture assist attempted behalf belt capture centers
458 ceremony comic cops cuts Dallas designer diamond disappointed dressed economics efficient
458 electrical employed enjoying entering essentially establishment expecting explains flower
458 ghost guests handed hockey Houston hunting industries Jane judges kit lab languages maps
458 Morgan Moscow nervous newly odd ordinary participate Philadelphia prayer principles rarely
458 references skill soil solve stomach struck studying supports trash ugly Vegas virus Walker
458 whoever
459 amounts Anthony Arthur aspect banned boost bureau colonel comfort controls cousin crack
459 deck demands dies dragon dramatic dust Dutch engineers evolution foods hired illness
459 inspiration institution kings knife lately lowest memorial Mexican minority mum opinions
459 patterns presents priority promotion rail readers remote repair root saint steal stolen
459 telephone titles trans ups whereas
460 abandoned acquired actors Alexander alliance annoying bid buddy buried butter cares
460 Columbia conclusion confirm congratulations contracts convinced crystal dean decent
460 decline delay describes desert downtown elite enemies forgotten forth gods hadn't hire hop
460 hopes insane installed landing layer managing marry nowhere nurse obtain organic ownership
460 participants Pennsylvania poetry pot pray printed recall rugby sake sheet signing smooth
460 spiritual stops string sudden Sweden throwing thrown vacation
461 abroad arab assigned associate assumed Atlantic bench bother broadcast bye Cambridge
461 citizen cleaning compete consists consumers contributed cricket critics damaged disaster
461 discover disney entrance equally fallen figured fitness Francis friendship Gary handling
461 intense keys lawyers lifetime liquid makeup medal mortgage narrative narrow observed
461 occasionally one's pan physics posting potentially reduction reflect refuse researchers
461 resource Roger ross sciences Seattle serves shell silly subsequent they'd towns
461 translation visible yep
462 adds Allen amendment angle Arizona arrive belong Berlin bishop channels Clark commonly
462 connect defensive designs efficiency enterprise experiment females findings firms forum
462 gifts grass hence increasingly incredibly Jay journalist kicked lessons lists maintained
462 mill occasion Oxford pace passenger pen pope possession races rapid regulation resident
462 rocks shaped sixth spin styles subjects suitable thirty valid vital whilst year's
463 agriculture alleged Anna Atlanta bands Christians collect commerce cop creek currency
463 emotions exhibition fraud funeral genuine Gordon honey honour hook hunter immigrants
463 improving instructions introduce Kansas lands legacy log Matthew merely monitor mother's
463 Patrick Phil prisoners programming publishing ratio regret rejected remind resort resulted
463 reverse routine scary seed settle sin spell summary survival sword tongue ward waves Wayne
464 achievement Anderson argued asleep Austin automatic begun behaviour cents coat
464 comprehensive consent daddy destruction Diego diseases divorce doc drove ears engage
464 extraordinary fate frequency gaming gene glory headquarters heritage initiative interviews
464 jean juice landscape logic meets Melbourne objective organisation privacy procedures
464 profits reducing regard representing residence roughly salary scoring script searching
464 sections strip surrounded threatened transferred tube universities Walter Wisconsin
464 would've writes
465 ambassador Ann awarded banking breast Carter Chelsea chemistry concluded consumption
465 corruption cotton crossed Detroit discount dozen engines epic exception exit expand fancy
465 gorgeous grateful heroes holes impression inches indicate input Johnny Josh knock leather
465 lips luxury lyrics manufacturers masters movements operated ought outcome painted poll
465 preferred pulling ranked referring removal reporter Rio risks rob screaming sequence
465 Singapore stretch tear tennis theater ties twelve versions virgin voices wishes wolf
466 absence agricultural ate athletes bears blues boxes Bruce bull cameras commonwealth
466 contribute contribution contributions couples delicious deny deserves ease extend fame
466 flood generated genetic glasses impressed indicated instant investors involves kate kills
466 liberty man's Maria ministers monitoring occurs passengers photographs principle producers
466 progressive punishment rally rapidly reader representation restaurants reveals roots
466 samples shops sum swing tail texts twin upcoming veterans
467 alert arena arguments Billy boom boots brave claiming column commit compensation
467 composition computers conservation constitutional crossing defending density difficulty
467 dropping drops elementary ethnic expenses fleet foster fundamental gen genius greatly
467 guidance hospitals infection intention Iowa jokes knee mechanical parks participation
467 periods precious pregnancy premium preparing pretend priest prominent proven radical
467 remembered requested residential reward rings Robin Russell satellite shake shore spots
467 stats struggling substantial teen temperatures transmission trap uniform wildlife wooden
468 ads aggressive anne answered apparent bang blast bones brands centuries communist
468 complaint component connections courage cure del desperate diversity duties encouraged eve
468 faculty feedback fighter frozen guards hiding humanity Ian innovation instruments invest
468 jacket Justin legislative listing manual mothers nursing occupied ongoing operator painful
468 pound preparation punch purple railroad registration releases Rick romance someone's
468 submitted sufficient survived suspended technologies tissue trailer trends trials
468 underground versus virtual walks wounded
469 ali amongst announcement arranged Arsenal attending attracted biological
"""


@lru_cache(maxsize=1)
def word_table() -> tuple[tuple[str, ...], np.ndarray]:
    """(words in frequency order, their relative frequencies summing to 1)."""
    words: list[str] = []
    freqs: list[float] = []
    for line in _DATA.splitlines():
        parts = line.split()
        if not parts:
            continue
        cb = int(parts[0])
        for w in parts[1:]:
            words.append(w)
            freqs.append(10.0 ** (-cb / 100.0))
    p = np.asarray(freqs, dtype=np.float64)
    return tuple(words), p / p.sum()


def words() -> tuple[str, ...]:
    """All words, most frequent first."""
    return word_table()[0]


def sampling_cdf(exponent: float = 0.75) -> np.ndarray:
    """Cumulative sampling distribution over ``words()`` with frequencies raised to ``exponent``.

    An exponent below 1 flattens the Zipf curve a little, so that content words are not drowned by
    "the", "of" and "and" while frequent words still dominate.
    """
    return _cdf(round(float(exponent), 6))


@lru_cache(maxsize=8)
def _cdf(exponent: float) -> np.ndarray:
    p = word_table()[1] ** exponent
    c = np.cumsum(p / p.sum())
    c[-1] = 1.0
    return c
