-- The rank profile: each user's likes and follows, also packed in one row
-- (see sqlite/rankprofile.go), kept by the triggers below in the statement
-- that changes a like or a follow. NULL: more than the bound (1024 likes,
-- 2000 follows), read from the rows.
CREATE TABLE rank_profile (
    user_id INTEGER PRIMARY KEY,
    likes   BLOB,
    follows BLOB
);

CREATE TRIGGER rank_profile_like AFTER INSERT ON likes
BEGIN
    UPDATE rank_profile SET likes = CASE WHEN likes IS NULL
        THEN (SELECT feedd_likes(post_id, author_id, created_at) FROM (SELECT post_id, author_id, created_at
            FROM likes WHERE user_id = new.user_id LIMIT 1025))
        ELSE feedd_likes_put(likes, new.post_id, new.author_id, new.created_at) END
        WHERE user_id = new.user_id;
    INSERT INTO rank_profile (user_id, likes, follows) SELECT new.user_id,
        (SELECT feedd_likes(post_id, author_id, created_at) FROM (SELECT post_id, author_id, created_at
            FROM likes WHERE user_id = new.user_id LIMIT 1025)),
        (SELECT feedd_follows(followee_id, created_at) FROM (SELECT followee_id, created_at
            FROM follows WHERE follower_id = new.user_id LIMIT 2001))
        WHERE NOT EXISTS (SELECT 1 FROM rank_profile WHERE user_id = new.user_id);
END;

CREATE TRIGGER rank_profile_unlike AFTER DELETE ON likes
BEGIN
    UPDATE rank_profile SET likes = feedd_likes_del(likes, old.post_id) WHERE user_id = old.user_id;
END;

CREATE TRIGGER rank_profile_like_update AFTER UPDATE ON likes
BEGIN
    UPDATE rank_profile SET likes = (SELECT feedd_likes(post_id, author_id, created_at) FROM (SELECT post_id, author_id, created_at
            FROM likes WHERE user_id = rank_profile.user_id LIMIT 1025))
        WHERE user_id IN (old.user_id, new.user_id);
END;

CREATE TRIGGER rank_profile_follow AFTER INSERT ON follows
BEGIN
    UPDATE rank_profile SET follows = CASE WHEN follows IS NULL
        THEN (SELECT feedd_follows(followee_id, created_at) FROM (SELECT followee_id, created_at
            FROM follows WHERE follower_id = new.follower_id LIMIT 2001))
        ELSE feedd_follows_put(follows, new.followee_id, new.created_at) END
        WHERE user_id = new.follower_id;
    INSERT INTO rank_profile (user_id, likes, follows) SELECT new.follower_id,
        (SELECT feedd_likes(post_id, author_id, created_at) FROM (SELECT post_id, author_id, created_at
            FROM likes WHERE user_id = new.follower_id LIMIT 1025)),
        (SELECT feedd_follows(followee_id, created_at) FROM (SELECT followee_id, created_at
            FROM follows WHERE follower_id = new.follower_id LIMIT 2001))
        WHERE NOT EXISTS (SELECT 1 FROM rank_profile WHERE user_id = new.follower_id);
END;

CREATE TRIGGER rank_profile_unfollow AFTER DELETE ON follows
BEGIN
    UPDATE rank_profile SET follows = feedd_follows_del(follows, old.followee_id) WHERE user_id = old.follower_id;
END;

CREATE TRIGGER rank_profile_follow_update AFTER UPDATE OF follower_id, followee_id, created_at ON follows
BEGIN
    UPDATE rank_profile SET follows = (SELECT feedd_follows(followee_id, created_at) FROM (SELECT followee_id, created_at
            FROM follows WHERE follower_id = rank_profile.user_id LIMIT 2001))
        WHERE user_id IN (old.follower_id, new.follower_id);
END;

-- The profiles of the users who have liked or followed.
INSERT INTO rank_profile (user_id, likes, follows) SELECT u.id,
    (SELECT feedd_likes(post_id, author_id, created_at) FROM (SELECT post_id, author_id, created_at
        FROM likes WHERE user_id = u.id LIMIT 1025)),
    (SELECT feedd_follows(followee_id, created_at) FROM (SELECT followee_id, created_at
        FROM follows WHERE follower_id = u.id LIMIT 2001))
    FROM users u WHERE EXISTS (SELECT 1 FROM likes WHERE user_id = u.id) OR EXISTS (SELECT 1 FROM follows WHERE follower_id = u.id);
