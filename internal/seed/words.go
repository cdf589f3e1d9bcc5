package seed

// The word lists below are the vocabulary of the generated catalog. They are
// read-only: nothing in this package writes to them, and changing any entry
// changes the generated data (and so the checksum of a seeded database).

// categoryDef describes one category and the words its product names are made
// of. priceFactor scales the catalog-wide price distribution, in percent.
type categoryDef struct {
	slug        string
	name        string
	nouns       []string
	materials   []string
	priceFactor int
}

// categoryDefs holds the catalog's categories in id order (id = index + 1).
var categoryDefs = [...]categoryDef{
	{"furniture", "Furniture", []string{"Side Table", "Bookshelf", "Armchair", "Coffee Table", "Nightstand", "Dresser", "Bench", "Stool"}, []string{"Oak", "Walnut", "Pine", "Bamboo", "Steel", "Rattan"}, 300},
	{"lighting", "Lighting", []string{"Table Lamp", "Pendant Light", "Floor Lamp", "Desk Lamp", "Wall Sconce", "String Lights", "Lantern", "Chandelier"}, []string{"Brass", "Glass", "Ceramic", "Linen", "Copper", "Aluminium"}, 150},
	{"cookware", "Cookware", []string{"Chef's Knife", "Skillet", "Saucepan", "Cutting Board", "Colander", "Mixing Bowl", "Dutch Oven", "Spatula"}, []string{"Stainless Steel", "Cast Iron", "Carbon Steel", "Maple", "Enamel", "Silicone"}, 100},
	{"tableware", "Tableware", []string{"Dinner Plate", "Serving Bowl", "Mug", "Teapot", "Platter", "Salad Bowl", "Pitcher", "Espresso Cup"}, []string{"Stoneware", "Porcelain", "Glass", "Ceramic", "Earthenware", "Bone China"}, 60},
	{"bedding", "Bedding", []string{"Duvet Cover", "Pillowcase Set", "Fitted Sheet", "Quilt", "Throw Blanket", "Pillow", "Mattress Topper", "Bedspread"}, []string{"Cotton", "Linen", "Wool", "Silk", "Flannel", "Percale"}, 120},
	{"bath", "Bath", []string{"Bath Towel", "Bath Mat", "Shower Curtain", "Soap Dish", "Bathrobe", "Hand Towel", "Toothbrush Holder", "Laundry Hamper"}, []string{"Cotton", "Bamboo", "Terry", "Waffle", "Teak", "Ceramic"}, 50},
	{"outdoor-living", "Outdoor Living", []string{"Patio Chair", "Planter", "Parasol", "Hammock", "Fire Pit", "Garden Bench", "Sun Lounger", "Bird Feeder"}, []string{"Teak", "Aluminium", "Acacia", "Wrought Iron", "Resin", "Concrete"}, 250},
	{"garden-tools", "Garden Tools", []string{"Trowel", "Pruner", "Rake", "Hose Reel", "Watering Can", "Spade", "Hedge Shear", "Wheelbarrow"}, []string{"Steel", "Ash", "Galvanised", "Forged", "Copper", "Aluminium"}, 80},
	{"camping", "Camping", []string{"Tent", "Sleeping Bag", "Camp Stove", "Hiking Backpack", "Headlamp", "Camp Chair", "Cooler", "Water Filter"}, []string{"Ripstop", "Nylon", "Titanium", "Polyester", "Canvas", "Aluminium"}, 150},
	{"cycling", "Cycling", []string{"Bike Helmet", "Bike Light", "Saddle", "Floor Pump", "Bike Lock", "Cycling Jersey", "Bottle Cage", "Pannier"}, []string{"Carbon", "Aluminium", "Merino", "Steel", "Nylon", "Polycarbonate"}, 120},
	{"running", "Running", []string{"Running Shoe", "Running Jacket", "Running Shorts", "Running Socks", "Hydration Vest", "Running Cap", "Tights", "Armband"}, []string{"Mesh", "Merino", "Nylon", "Polyester", "Knit", "Softshell"}, 90},
	{"fitness", "Fitness", []string{"Yoga Mat", "Kettlebell", "Dumbbell Set", "Resistance Band", "Jump Rope", "Foam Roller", "Pull-Up Bar", "Gym Bag"}, []string{"Rubber", "Cast Iron", "Neoprene", "Cork", "Steel", "Natural Latex"}, 80},
	{"apparel", "Apparel", []string{"Shirt", "Sweater", "Jacket", "Chinos", "Hoodie", "Overcoat", "Polo", "Gilet"}, []string{"Cotton", "Wool", "Linen", "Denim", "Cashmere", "Corduroy"}, 100},
	{"footwear", "Footwear", []string{"Sneaker", "Boot", "Loafer", "Sandal", "Slipper", "Derby Shoe", "Chelsea Boot", "Espadrille"}, []string{"Leather", "Suede", "Canvas", "Nubuck", "Rubber", "Felt"}, 130},
	{"bags", "Bags", []string{"Tote Bag", "Backpack", "Duffel Bag", "Messenger Bag", "Wallet", "Card Holder", "Briefcase", "Crossbody Bag"}, []string{"Leather", "Canvas", "Nylon", "Waxed Cotton", "Suede", "Cork"}, 110},
	{"watches", "Watches", []string{"Watch", "Watch Strap", "Chronograph", "Dive Watch", "Field Watch", "Dress Watch", "Pocket Watch", "Watch Roll"}, []string{"Steel", "Titanium", "Leather", "Ceramic", "Gold-Tone", "Nylon"}, 400},
	{"jewelry", "Jewelry", []string{"Necklace", "Ring", "Bracelet", "Earrings", "Pendant", "Anklet", "Brooch", "Cufflinks"}, []string{"Silver", "Gold", "Rose Gold", "Pearl", "Brass", "Titanium"}, 150},
	{"audio", "Audio", []string{"Headphones", "Earbuds", "Speaker", "Soundbar", "Turntable", "Amplifier", "Microphone", "Radio"}, []string{"Aluminium", "Walnut", "Fabric", "Matte", "Bamboo", "Oak"}, 250},
	{"computer-accessories", "Computer Accessories", []string{"Keyboard", "Mouse", "Monitor Stand", "Laptop Sleeve", "USB Hub", "Webcam", "Desk Mat", "Docking Station"}, []string{"Aluminium", "Felt", "Plastic", "Wool", "Leather", "Bamboo"}, 100},
	{"phone-accessories", "Phone Accessories", []string{"Phone Case", "Screen Protector", "Charger", "Charging Cable", "Power Bank", "Car Mount", "Wireless Charger", "Phone Stand"}, []string{"Silicone", "Leather", "Tempered Glass", "Braided", "Aluminium", "Recycled"}, 40},
	{"photography", "Photography", []string{"Camera Bag", "Tripod", "Camera Strap", "Lens Cap", "Lens Filter", "Light Stand", "Reflector", "Lens Pouch"}, []string{"Aluminium", "Carbon", "Leather", "Canvas", "Nylon", "Optical Glass"}, 150},
	{"gaming", "Gaming", []string{"Controller", "Gaming Headset", "Gaming Mouse", "Mouse Pad", "Controller Stand", "Gaming Chair", "Keycap Set", "Capture Card"}, []string{"RGB", "Matte", "Mesh", "PBT", "Aluminium", "Leatherette"}, 150},
	{"toys", "Toys", []string{"Building Set", "Jigsaw Puzzle", "Plush Toy", "Train Set", "Board Game", "Kite", "Doll House", "Spinning Top"}, []string{"Wooden", "Plush", "Cardboard", "Felt", "Beech", "Recycled Plastic"}, 50},
	{"baby", "Baby", []string{"Baby Blanket", "Bib Set", "Teether", "Stroller Organiser", "Swaddle", "Rattle", "High Chair", "Play Mat"}, []string{"Organic Cotton", "Muslin", "Silicone", "Beech", "Bamboo", "Wool"}, 60},
	{"pets", "Pets", []string{"Dog Bed", "Cat Tree", "Leash", "Collar", "Feeding Bowl", "Pet Carrier", "Chew Toy", "Scratching Post"}, []string{"Canvas", "Nylon", "Sisal", "Ceramic", "Rubber", "Fleece"}, 60},
	{"stationery", "Stationery", []string{"Notebook", "Fountain Pen", "Pencil Case", "Planner", "Desk Organiser", "Sketchbook", "Letter Tray", "Ink Set"}, []string{"Leather", "Kraft Paper", "Brass", "Linen", "Recycled", "Cork"}, 30},
	{"art-supplies", "Art Supplies", []string{"Paint Set", "Brush Set", "Easel", "Canvas Pad", "Palette", "Marker Set", "Charcoal Kit", "Drawing Board"}, []string{"Watercolour", "Acrylic", "Oil", "Gouache", "Beech", "Sable"}, 40},
	{"musical-instruments", "Musical Instruments", []string{"Ukulele", "Guitar Strap", "Capo", "Music Stand", "Harmonica", "Drumsticks", "Tuner", "Metronome"}, []string{"Mahogany", "Spruce", "Maple", "Leather", "Brass", "Rosewood"}, 120},
	{"hand-tools", "Hand Tools", []string{"Hammer", "Screwdriver Set", "Wrench", "Pliers", "Tape Measure", "Utility Knife", "Spirit Level", "Hand Saw"}, []string{"Steel", "Chrome Vanadium", "Fibreglass", "Hickory", "Titanium", "Forged"}, 60},
	{"power-tools", "Power Tools", []string{"Drill", "Impact Driver", "Circular Saw", "Sander", "Jigsaw", "Heat Gun", "Rotary Tool", "Angle Grinder"}, []string{"Cordless", "Brushless", "Compact", "Heavy-Duty", "18V", "12V"}, 250},
	{"storage", "Storage", []string{"Storage Box", "Basket", "Shelf Unit", "Drawer Organiser", "Garment Rack", "Shoe Rack", "Wall Hook", "Crate"}, []string{"Wicker", "Seagrass", "Steel", "Pine", "Canvas", "Felt"}, 60},
	{"home-decor", "Home Decor", []string{"Vase", "Picture Frame", "Candle Holder", "Wall Mirror", "Wall Clock", "Cushion", "Rug", "Wall Art"}, []string{"Ceramic", "Brass", "Glass", "Jute", "Velvet", "Marble"}, 70},
	{"cleaning", "Cleaning", []string{"Broom", "Mop", "Dustpan Set", "Scrub Brush", "Spray Bottle", "Cleaning Caddy", "Duster", "Squeegee"}, []string{"Bamboo", "Microfibre", "Horsehair", "Steel", "Recycled", "Beech"}, 30},
	{"small-appliances", "Small Appliances", []string{"Kettle", "Toaster", "Blender", "Coffee Grinder", "Stand Mixer", "Rice Cooker", "Air Fryer", "Espresso Machine"}, []string{"Stainless Steel", "Matte Black", "Enamel", "Glass", "Chrome", "Copper"}, 300},
	{"coffee-tea", "Coffee & Tea", []string{"Pour-Over Dripper", "French Press", "Tea Infuser", "Coffee Canister", "Milk Frother", "Tea Tin", "Gooseneck Kettle", "Cold Brew Jar"}, []string{"Glass", "Ceramic", "Stainless Steel", "Copper", "Borosilicate", "Cast Iron"}, 60},
	{"beauty", "Beauty", []string{"Hair Brush", "Makeup Bag", "Vanity Mirror", "Comb", "Nail Kit", "Hair Dryer", "Cosmetic Case", "Safety Razor"}, []string{"Bamboo", "Boar Bristle", "Leather", "Steel", "Sandalwood", "Ceramic"}, 50},
	{"travel", "Travel", []string{"Suitcase", "Packing Cubes", "Travel Pillow", "Toiletry Bag", "Passport Holder", "Luggage Tag", "Garment Bag", "Carry-On"}, []string{"Polycarbonate", "Nylon", "Leather", "Aluminium", "Memory Foam", "Canvas"}, 200},
	{"office-furniture", "Office Furniture", []string{"Office Chair", "Standing Desk", "Filing Cabinet", "Footrest", "Monitor Arm", "Bookcase", "Desk Drawer", "Meeting Table"}, []string{"Mesh", "Oak", "Steel", "Walnut", "Birch", "Aluminium"}, 350},
	{"rainwear", "Rainwear", []string{"Raincoat", "Umbrella", "Rain Boot", "Poncho", "Rain Hat", "Gaiters", "Dry Bag", "Rain Cover"}, []string{"Waxed Cotton", "PVC", "Nylon", "Laminated", "Rubber", "Oilskin"}, 80},
	{"winter-sports", "Winter Sports", []string{"Ski Goggles", "Beanie", "Gloves", "Ski Socks", "Snowboard Bag", "Base Layer", "Neck Warmer", "Hand Warmer"}, []string{"Merino", "Fleece", "Wool", "Down", "Softshell", "Polycarbonate"}, 110},
}

// adjectives open every product name.
var adjectives = [...]string{
	"Classic", "Modern", "Rustic", "Compact", "Deluxe", "Essential", "Minimalist", "Vintage",
	"Nordic", "Urban", "Heritage", "Lightweight", "Premium", "Everyday", "Handmade", "Artisan",
	"Ergonomic", "Portable", "Signature", "Coastal", "Alpine", "Studio", "Weekend", "Rugged",
	"Slim", "Soft", "Timeless", "Bold", "Natural", "Refined",
}

// nameSuffixes end some product names; the empty entries keep most names short.
var nameSuffixes = [...]string{"", "", "", "", "", "", " Pro", " Mini", " XL", " 2.0", " Plus", " (Set of 2)"}

var colors = [...]string{
	"black", "white", "charcoal", "navy", "forest green", "sand", "terracotta", "olive",
	"slate grey", "ivory", "mustard", "burgundy", "sky blue", "natural", "walnut brown", "blush",
}

var uses = [...]string{
	"everyday use", "small spaces", "weekend trips", "busy mornings", "gifting", "first homes",
	"long days outdoors", "the home office", "family dinners", "quiet evenings",
}

// Description sentences. Placeholders: {A} ("A" or "An", matching the
// adjective), {adj}, {material}, {noun}, {color}, {use}, {category},
// {warranty}, {weight}; words are lower-cased inside sentences.
var leadSentences = [...]string{
	"{A} {adj} {noun} made from {material}.",
	"This {material} {noun} comes in {color}.",
	"Our {adj} take on the {noun}, in {material}.",
	"{A} {adj} {noun} for {use}.",
}

var extraSentences = [...]string{
	"Designed for {use}.",
	"Finished in {color} and built to last.",
	"Backed by a {warranty}-year warranty.",
	"Easy to clean and simple to store.",
	"Weighs {weight} g.",
	"Ships in recyclable packaging.",
	"Pairs well with the rest of our {category} range.",
	"A favourite for {use}.",
}

// Review text, indexed by rating - 1.
var reviewTitles = [5][]string{
	{"Terrible", "Broke after a week", "Do not buy", "Waste of money", "Very poor quality", "Returned it"},
	{"Disappointed", "Not as described", "Below expectations", "Would not buy again", "Meh", "Flimsy"},
	{"It's okay", "Average", "Mixed feelings", "Decent but not great", "Fine for the price", "Could be better"},
	{"Very good", "Great value", "Happy with it", "Solid choice", "Nearly perfect", "Does the job well"},
	{"Absolutely love it", "Exceeded expectations", "Perfect", "Best purchase this year", "Five stars", "Highly recommend"},
}

var reviewOpeners = [5][]string{
	{"It stopped working almost immediately.", "Nothing like the pictures.", "Arrived damaged and support was no help.", "Cheaply made."},
	{"It works, but only just.", "Smaller than I expected.", "Not worth the price.", "The quality is not what I hoped for."},
	{"Does what it says, nothing more.", "Some good points and some bad.", "Fine for occasional use.", "Took a while to arrive but it is okay."},
	{"Good quality for the price.", "Works well and looks nice.", "I use it most days.", "Arrived quickly and well packed."},
	{"Exactly what I was looking for.", "The quality is outstanding.", "Looks even better in person.", "I use it every day and it still looks new.", "Bought a second one as a gift."},
}

var reviewAspects = [...]string{"build quality", "finish", "size", "colour", "packaging", "price", "comfort", "instructions"}

var reviewVerdicts = [5][]string{
	{"awful", "terrible", "unacceptable"},
	{"mediocre", "disappointing", "poor"},
	{"fine", "acceptable", "so-so"},
	{"good", "very good", "solid"},
	{"excellent", "superb", "spot on"},
}
