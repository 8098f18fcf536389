package seed

import (
	"fmt"
	"math/rand/v2"
	"strings"

	feed "github.com/feedd/feedd"
)

var (
	firstNames = []string{"Ada", "Bea", "Carlos", "Dana", "Eli", "Farah", "Gus", "Hana", "Ivan", "Jun", "Kemi", "Lior", "Mara", "Nico", "Oona", "Pablo", "Quinn", "Rosa", "Sami", "Tove", "Uma", "Vik", "Wen", "Xavi", "Yara", "Zeno", "Li", "Mei", "Noor", "Omar"}
	lastNames  = []string{"Park", "Okafor", "Silva", "Novak", "Haddad", "Larsen", "Moreau", "Tanaka", "Rossi", "Kaur", "Nguyen", "Fischer", "Costa", "Ibrahim", "Walsh", "Chen"}
	topics     = []struct {
		titles   []string
		contents []string
	}{
		{[]string{"Sourdough, day %d", "Weekend baking", "Finally nailed the crust"}, []string{"Left the starter out overnight and it doubled. Crumb is open, crust crackles.", "Tried a 75%% hydration loaf. Messy to shape, worth it.", "Rye and caraway this time. The kitchen smells amazing."}},
		{[]string{"Morning run", "New 10k best", "Rainy trail notes"}, []string{"Out before sunrise, the river path was empty. %d km and a coffee after.", "Negative splits for once! Legs are complaining now.", "Mud up to the ankles, zero regrets."}},
		{[]string{"Reading list", "Just finished a book", "Library haul"}, []string{"Halfway through a novel about a lighthouse keeper and I can't put it down.", "Five stars. The last chapter rearranged everything I thought I knew.", "Picked up %d books I definitely won't finish this month."}},
		{[]string{"Balcony garden update", "Tomatoes!", "Seedlings are up"}, []string{"The basil is thriving, the mint is trying to take over.", "First ripe tomato of the year. Ate it standing in the sun.", "%d little sprouts. Talking to them seems to help."}},
		{[]string{"Side project", "Shipped it", "Debugging story"}, []string{"Spent the evening on a tiny CLI tool. It does one thing and does it well.", "Pushed version 0.%d. Three users, all of them friends, all of them happy.", "The bug was a missing <br> in a template. Four hours. <b>Four.</b>"}},
		{[]string{"Coffee thoughts", "New café in town", "Pour-over practice"}, []string{"Ethiopian beans, light roast, blueberry notes. Worth the early alarm.", "The barista remembered my order on the second visit. Loyalty unlocked.", "Grind size matters more than I wanted to admit."}},
		{[]string{"Trip photos", "Back from the coast", "Train window views"}, []string{"The ferry ride alone was worth it. Seals!", "%d hours on a train and I'd do it again tomorrow.", "Sand in every bag. Still smiling."}},
	}
)

// nickName is a believable display name for user i.
func nickName(rng *rand.Rand, i int) string {
	name := firstNames[rng.IntN(len(firstNames))] + " " + lastNames[rng.IntN(len(lastNames))]
	if i >= len(firstNames)*len(lastNames)/2 {
		name += fmt.Sprintf(" %d", i)
	}
	return name
}

// post is a short post on one of the topics. Some mention markup, which
// feedd keeps as text.
func post(rng *rand.Rand) feed.PostInput {
	t := topics[rng.IntN(len(topics))]
	fill := func(s string) string {
		if strings.Contains(s, "%d") {
			return fmt.Sprintf(s, 2+rng.IntN(20))
		}
		return strings.ReplaceAll(s, "%%", "%")
	}
	return feed.PostInput{
		Title:   fill(t.titles[rng.IntN(len(t.titles))]),
		Content: fill(t.contents[rng.IntN(len(t.contents))]),
	}
}
