() => JSON.stringify({people: ui_utils.PEOPLE_NAMES, last_names: ui_utils.LAST_NAMES,
        countries: ui_utils.COUNTRIES, languages: ui_utils.LANGUAGES,
        lorem: ui_utils.lorem_words, colors: ui_utils.COLORS})
